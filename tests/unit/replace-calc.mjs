// Writes gemini-cli's calculateReplacement result for each case DIR/<i>.txt with
// DIR/<i>.json (i from 0 to N-1), in one process: DIR/<i>.occ (the occurrences, then
// whether allow_multiple was set) and DIR/<i>.new (the new content). Run from the
// directory holding node_modules. Usage: replace-calc.mjs DIR N
import fs from 'node:fs';
const { calculateReplacement } = await import(process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/tools/edit.js');
const [dir, n] = [process.argv[2], Number(process.argv[3])];
const config = new Proxy({}, { get: () => () => undefined });	// telemetry only
for (let i = 0; i < n; i++) {
	const content = fs.readFileSync(`${dir}/${i}.txt`, 'utf8').replace(/\r\n/g, '\n');
	const params = JSON.parse(fs.readFileSync(`${dir}/${i}.json`, 'utf8'));
	const r = await calculateReplacement(config, { params, currentContent: content, abortSignal: new AbortController().signal });
	fs.writeFileSync(`${dir}/${i}.occ`, `${r.occurrences} ${params.allow_multiple === true}\n`);
	fs.writeFileSync(`${dir}/${i}.new`, r.newContent ?? '');
}
