// Module resolution hook for the interop host: the published client imports the DeepSeek
// Harness runtime (@deepseek-ai/*), which a BCN channel plugin gets from its host process.
// This host is that process, so it supplies those modules itself (./stubs/); everything
// else, the client's own code included, resolves and loads unchanged.
const STUBS = new Map([
  ['@deepseek-ai/dsh-agent', 'dsh-agent.mjs'],
  ['@deepseek-ai/dsh-llm', 'dsh-llm.mjs'],
  ['@deepseek-ai/dsh-tools', 'dsh-tools.mjs'],
  ['@deepseek-ai/dsh-session', 'dsh-session.mjs'],
  ['@deepseek-ai/dsh-credentials', 'dsh-credentials.mjs'],
  ['@deepseek-ai/schemastery', 'schemastery.mjs'],
]);

export async function resolve(specifier, context, nextResolve) {
  const stub = STUBS.get(specifier);
  if (stub) {
    return { url: new URL(`./stubs/${stub}`, import.meta.url).href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
