// Prints gemini-cli's getDiffContextSnippet(old, new, 5) for two files (run from the
// directory holding node_modules with @google/gemini-cli-core).
import fs from 'node:fs';
const { getDiffContextSnippet } = await import(process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/tools/diff-utils.js');
const [a, b] = process.argv.slice(2).map((f) => fs.readFileSync(f, 'utf8'));
process.stdout.write(getDiffContextSnippet(a, b, 5));
