// A credential reference is its name; the host's credential store is keyed by it.
export function credentialRef(name) {
  return String(name);
}
