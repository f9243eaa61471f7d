// Host side of `installModelSelection`: this host has no model to select.
export function installModelSelection() {}
