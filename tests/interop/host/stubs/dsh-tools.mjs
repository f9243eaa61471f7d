// A tool definition is kept as given; the host calls its `execute` when the test asks.
export function defineTool(definition) {
  return definition;
}
