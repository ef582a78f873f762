// ONNX Runtime (CPU execution provider, from the onnxruntime-node package) worker of the peer
// benchmark. Loads one model once, then answers commands on stdin, one JSON object a line:
//   {"cmd": "run", "warmup": W, "iterations": N}  ->  {"times_ms": [...]}   (one entry per timed run)
//   {"cmd": "quit"}                               ->  exits
// On start it runs the input once, writes the first output as raw float32 to OUTPUT_BIN and prints
// {"ready": true, ...}. Process start-up and model load are never inside a timed run.
//
// Usage: node ort_worker.js MODEL.onnx INPUT.bin DIMS(1x3x224x224) THREADS OUTPUT.bin
'use strict';
const fs = require('fs');
const readline = require('readline');

async function main() {
  const [model, inputBin, dimsText, threadsText, outputBin] = process.argv.slice(2);
  const baselineRssKb = process.resourceUsage().maxRSS;
  const ort = require('onnxruntime-node');
  const threads = parseInt(threadsText, 10);
  const dims = dimsText.split('x').map((d) => parseInt(d, 10));
  const buf = fs.readFileSync(inputBin);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  feeds[session.inputNames[0]] = new ort.Tensor('float32', data, dims);
  const first = await session.run(feeds);
  const out = first[session.outputNames[0]];
  fs.writeFileSync(outputBin, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
  const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  send({ready: true, engine: 'onnxruntime', version: ort.env.versions.node || ort.env.versions.common,
        load_ms: loadMs, baseline_rss_kb: baselineRssKb, output_shape: out.dims});

  const rl = readline.createInterface({input: process.stdin});
  for await (const line of rl) {
    const cmd = JSON.parse(line);
    if (cmd.cmd === 'quit') break;
    if (cmd.cmd !== 'run') {
      send({error: `unknown command ${cmd.cmd}`});
      continue;
    }
    for (let i = 0; i < cmd.warmup; ++i) await session.run(feeds);
    const times = new Array(cmd.iterations);
    for (let i = 0; i < cmd.iterations; ++i) {
      const s = process.hrtime.bigint();
      await session.run(feeds);
      times[i] = Number(process.hrtime.bigint() - s) / 1e6;
    }
    send({times_ms: times});
  }
  await session.release();
  process.exit(0);
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({error: String(e && e.stack || e)}) + '\n');
  process.exit(1);
});
