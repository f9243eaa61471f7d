// A minimal DeepSeek Harness host for the BCN server's published channel client
// (@avernet-plugin/deepseek-harness-channel-bcn), so tests/interop can drive that client's
// protocol code, unmodified, against `bcn-bridge hub`.
//
// The host plays the DeepSeek Harness runtime around the client: credentials, agents and
// their session events. It wires the client's own pieces together exactly as the client's
// entry point does (onboarding, BcnWsClient, BcnBridge), keeping handles so the test can
// watch the connection. It speaks JSON lines: commands on stdin, observations on stdout.
//
//   node host.mjs --modules DIR/node_modules --endpoint http://127.0.0.1:PORT/ --bot-name N
//   (the onboarding token comes from the BCN_ONBOARDING_TOKEN environment variable)
//
// Observations: {"event": "log"|"connection"|"followup"|"inject"|"done"|"fatal", ...}
// Commands: {"cmd": "delta"|"final"|"fail"|"abort_turn", "turn": N, ...},
//           {"cmd": "tool", "turn": N, "name": "bcs_assign_task", "args": {...}},
//           {"cmd": "request", "method": "...", "params": {...}}, {"cmd": "stop"};
//           every command may carry an "id", echoed by its {"event": "done"}.
import { register } from 'node:module';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

register('./hooks.mjs', import.meta.url);

const { values: args } = parseArgs({
  options: {
    modules: { type: 'string' },
    endpoint: { type: 'string' },
    'bot-name': { type: 'string', default: 'Harness' },
    'heartbeat-ms': { type: 'string', default: '1000' },
  },
});

function emit(event, fields = {}) {
  process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
}

const dist = pathToFileURL(`${args.modules}/@avernet-plugin/deepseek-harness-channel-bcn/dist/`);
const load = (file) => import(new URL(file, dist).href);
const { normalizeConfig } = await load('config.js');
const { loadOrOnboardBotSession, persistBotSession } = await load('credentials.js');
const { BcnWsClient } = await load('ws-client.js');
const { BcnBridge } = await load('bridge.js');

// ---------------------------------------------------------------- the DSH runtime, played
const listeners = new Map();
const credentials = new Map();
if (process.env.BCN_ONBOARDING_TOKEN) {
  credentials.set('BCN_ONBOARDING_TOKEN', process.env.BCN_ONBOARDING_TOKEN);
}
const agents = new Map(); // session id -> agent
const turns = new Map(); // turn number -> agent
const tools = new Map(); // session id -> (tool name -> tool)
let nextTurn = 0;

function on(name, handler) {
  const handlers = listeners.get(name) ?? new Set();
  handlers.add(handler);
  listeners.set(name, handlers);
  return () => handlers.delete(handler);
}

function fire(name, ...payload) {
  for (const handler of listeners.get(name) ?? []) handler(...payload);
}

function textOf(message) {
  const text = message.content.map((block) => block.text ?? '').join('');
  const match = /^<bcn_context>\n(.*)\n<\/bcn_context>\n\n([\s\S]*)$/.exec(text);
  return match ? { context: JSON.parse(match[1]), text: match[2] } : { context: null, text };
}

function makeAgent(sessionId) {
  const agent = {
    id: sessionId,
    session: { header: { cwd: process.cwd() }, requestHeader: () => undefined },
    followup(message) {
      const turn = ++nextTurn;
      turns.set(turn, agent);
      fire('agent/inbox/claimed', { agent, message, turn });
      emit('followup', { turn, session: sessionId, ...textOf(message) });
    },
    inject(message) {
      emit('inject', { session: sessionId, ...textOf(message) });
    },
    cancel() {},
  };
  return agent;
}

async function createAgent({ sessionId, resumeSessionId, setup }) {
  const id = sessionId ?? resumeSessionId;
  const agent = makeAgent(id);
  const registered = new Map();
  tools.set(id, registered);
  await setup({
    agent,
    systemPrompt: { variable() {} },
    tools: { register: (tool) => registered.set(tool.name, tool) },
  });
  agents.set(id, agent);
  return { agent, dispose: async () => agents.delete(id) };
}

const ctx = {
  on,
  logger: () => ({
    info: (message) => emit('log', { level: 'info', message }),
    warn: (message) => emit('log', { level: 'warn', message }),
    error: (message) => emit('log', { level: 'error', message }),
    debug: (message) => emit('log', { level: 'debug', message }),
  }),
  credentials: {
    resolve: async (ref) => (credentials.has(ref) ? { value: credentials.get(ref) } : undefined),
    set: async (ref, value) => credentials.set(ref, value),
  },
  agents: { get: (id) => agents.get(id), create: createAgent, resume: createAgent },
  sessionPersistence: { list: async () => [], inspect: async () => ({ events: [], meta: {} }) },
  agentDefaultModel: { currentSelection: () => ({ provider: 'host', model: 'scripted' }) },
  agentPresets: { resolve: async () => ({ id: 'standard' }), mount: async () => {} },
};

// ---------------------------------------------------------------- the client, as its entry wires it
const config = normalizeConfig({
  enabled: true,
  endpoint: args.endpoint,
  botName: args['bot-name'],
  summary: 'Scripted DeepSeek Harness bot for interop tests',
  domains: ['interop'],
  skills: ['chat'],
  scopes: ['chat'],
  onboardingTokenRef: 'BCN_ONBOARDING_TOKEN',
  botSessionRef: 'BCN_BOT_SESSION',
  connectionTimeoutMs: 5_000,
  heartbeatIntervalMs: Number(args['heartbeat-ms']),
  reconnectInitialMs: 100,
  reconnectMaxMs: 500,
});
const log = ctx.logger();
const { session, endpoint } = await loadOrOnboardBotSession(ctx, config);
emit('log', { level: 'info', message: `onboarded as ${session.botName} (${session.botUuid})` });
let bridge;
const client = new BcnWsClient({
  endpoint,
  session,
  config,
  status: () => (bridge?.busy ? 'busy' : 'idle'),
  onSessionChanged: (rotated) => persistBotSession(ctx, config, rotated),
  log,
});
bridge = new BcnBridge(ctx, client, config, log);
bridge.start();
client.start();

let connected = false;
let connects = 0;
const watcher = setInterval(() => {
  if (client.connected !== connected) {
    connected = client.connected;
    if (connected) connects += 1;
    emit('connection', { connected, connects });
  }
}, 10);

// ---------------------------------------------------------------- commands
function sessionEvent(turn, type, data) {
  const agent = turns.get(turn);
  if (!agent) throw new Error(`no turn ${turn}`);
  fire('session/event', { id: agent.id }, { type, data: { turn, ...data } });
}

const commands = {
  delta: ({ turn, text }) => sessionEvent(turn, 'assistant/chunk',
    { step: 0, chunk: { type: 'text-delta', text } }),
  final: ({ turn }) => sessionEvent(turn, 'turn/end', { reason: { kind: 'completed' } }),
  fail: ({ turn, code }) => sessionEvent(turn, 'turn/end',
    { reason: { kind: 'error', error: { code } } }),
  abort_turn: ({ turn }) => sessionEvent(turn, 'turn/end', { reason: { kind: 'aborted' } }),
  tool: async ({ turn, name, args: toolArgs }) => {
    const agent = turns.get(turn);
    const tool = tools.get(agent?.id)?.get(name);
    if (!tool) throw new Error(`no tool ${name} for turn ${turn}`);
    return tool.execute(toolArgs, { agent, signal: new AbortController().signal });
  },
  request: async ({ method, params }) => client.sendRequest(method, params, 5_000),
  stop: async () => {
    clearInterval(watcher);
    await bridge.dispose();
    await client.stop();
    emit('done', { stopped: true });
    process.exit(0);
  },
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  try {
    const result = await commands[command.cmd](command);
    emit('done', { id: command.id ?? null, result: result ?? null });
  } catch (error) {
    emit('done', { id: command.id ?? null, error: String(error?.message ?? error) });
  }
}
