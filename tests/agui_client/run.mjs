#!/usr/bin/env node
// Drives an AG-UI endpoint with the official client, @ag-ui/client's HttpAgent.
//
//   node run.mjs URL [--prompt TEXT] [--thread ID] [--deny] [--max-runs N]
//
// Sends one user message (--prompt, default "Ship the release notes"), prints every event the
// client accepted as one JSON line on stdout, and while a run finishes with an interrupt
// outcome starts the next run with a `resume` answering every pending interrupt: approved
// ({"approved": true}), or denied with --deny. Exit 0 once a run finishes without an
// interrupt; 1 with a message on stderr if a run ends in RUN_ERROR, the client rejects the
// stream (its verifier checks event order), the HTTP request fails, or --max-runs (default
// 10) runs were not enough.

import { HttpAgent } from "@ag-ui/client";

function usage(message) {
  process.stderr.write(`run.mjs: ${message}\n`);
  process.stderr.write("usage: node run.mjs URL [--prompt TEXT] [--thread ID] [--deny] [--max-runs N]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const options = { prompt: "Ship the release notes", thread: "thread-1", deny: false, maxRuns: 10 };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "--prompt") options.prompt = value();
    else if (arg === "--thread") options.thread = value();
    else if (arg === "--deny") options.deny = true;
    else if (arg === "--max-runs") options.maxRuns = Number.parseInt(value(), 10);
    else if (arg.startsWith("--")) usage(`unknown option ${arg}`);
    else rest.push(arg);
  }
  if (rest.length !== 1) usage("give exactly one URL");
  if (!(options.maxRuns > 0)) usage("--max-runs must be a positive integer");
  return { url: rest[0], ...options };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const agent = new HttpAgent({
    url: options.url,
    threadId: options.thread,
    initialMessages: [{ id: "user-1", role: "user", content: options.prompt }],
  });
  let resume;
  for (let run = 1; run <= options.maxRuns; run++) {
    let runError = null;
    const parameters = { runId: `${options.thread}-run-${run}` };
    if (resume !== undefined) parameters.resume = resume;
    await agent.runAgent(parameters, {
      onEvent({ event }) {
        process.stdout.write(`${JSON.stringify(event)}\n`);
      },
      onRunErrorEvent({ event }) {
        runError = event;
      },
    });
    if (runError !== null) {
      const code = runError.code ? ` (${runError.code})` : "";
      throw new Error(`run ${run} failed${code}: ${runError.message}`);
    }
    const interrupts = agent.pendingInterrupts ?? [];
    if (interrupts.length === 0) {
      process.stderr.write(`run.mjs: done after ${run} run(s)\n`);
      return;
    }
    resume = interrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "resolved",
      payload: { approved: !options.deny },
    }));
  }
  throw new Error(`still interrupted after ${options.maxRuns} runs`);
}

main().catch((error) => {
  process.stderr.write(`run.mjs: ${error?.message ?? error}\n`);
  process.exit(1);
});
