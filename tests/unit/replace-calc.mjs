// Prints gemini-cli's calculateReplacement result for FILE and PARAMS.json as
// {"occurrences", "newContent"} (run from the directory holding node_modules).
import fs from 'node:fs';
const { calculateReplacement } = await import(process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/tools/edit.js');
const content = fs.readFileSync(process.argv[2], 'utf8').replace(/\r\n/g, '\n');
const params = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const config = new Proxy({}, { get: () => () => undefined });	// telemetry only
const r = await calculateReplacement(config, { params, currentContent: content, abortSignal: new AbortController().signal });
process.stdout.write(JSON.stringify({ occurrences: r.occurrences, newContent: r.newContent }));
