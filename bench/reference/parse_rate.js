// Times the reference parser exactly as bench/protocol.py times ours: calls per CPU second
// of this process (process.cpuUsage, user + system), best of three batches each sized to
// about a third of the time budget. Reads {"parser": path, "seconds": s, "cases": {name:
// text}} on stdin; prints {"rates": {name: calls/s}, "parsed": {name: fields or null}, ...}.
"use strict";

const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const { parse } = require(job.parser);
  const rates = {};
  const parsed = {};
  for (const [name, text] of Object.entries(job.cases)) {
    const message = parse(text);
    parsed[name] = message && {
      type: message.type, to: message.to, from: message.from,
      requestId: message.requestId, task: message.task,
    };
    rates[name] = rate(() => parse(text), job.seconds);
  }
  process.stdout.write(JSON.stringify({ rates, parsed, kept }) + "\n");
});

function cpuSeconds(since) {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

// Results are counted so the JIT cannot drop a call whose value nobody reads.
let kept = 0;

function rate(operation, seconds) {
  let calls = 1;
  let elapsed;
  for (;;) {
    const started = process.cpuUsage();
    for (let i = 0; i < calls; i++) operation();
    elapsed = cpuSeconds(started);
    if (elapsed > 0.05) break;
    calls *= 4;
  }
  const batch = Math.max(1, Math.floor((calls * (seconds / 3)) / elapsed));
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const started = process.cpuUsage();
    for (let i = 0; i < batch; i++) if (operation() !== null) kept++;
    best = Math.min(best, cpuSeconds(started));
  }
  return batch / best;
}
