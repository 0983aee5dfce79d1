// Writes gemini-cli's getDiffContextSnippet(old, new, 5) for each DIR/<i>/old and
// DIR/<i>/new (i from 1 to N) as DIR/<i>/want, in one process (run from the directory
// holding node_modules with @google/gemini-cli-core). Usage: snippet.mjs DIR N
import fs from 'node:fs';
const { getDiffContextSnippet } = await import(process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/tools/diff-utils.js');
const [dir, n] = [process.argv[2], Number(process.argv[3])];
for (let i = 1; i <= n; i++) {
	const [a, b] = ['old', 'new'].map((f) => fs.readFileSync(`${dir}/${i}/${f}`, 'utf8'));
	fs.writeFileSync(`${dir}/${i}/want`, getDiffContextSnippet(a, b, 5));
}
