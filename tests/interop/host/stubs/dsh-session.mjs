// Session ids are plain strings in this host.
export function SessionId(value) {
  return String(value);
}
