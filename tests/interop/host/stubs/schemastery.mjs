// The client declares its config schema with schemastery at import time. This host builds
// the config object itself, so every schema call only has to chain.
function node() {
  const chain = new Proxy(function schema() {}, {
    get: () => chain,
    apply: () => chain,
  });
  return chain;
}

const Schema = new Proxy({}, { get: () => () => node() });
export default Schema;
