// Reads relative paths on stdin and prints those gemini-cli's FileDiscoveryService keeps for
// ROOT (args: ROOT [nogit] [nogemini]); run from the directory holding node_modules.
import fs from 'node:fs';
const { FileDiscoveryService } = await import(process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/services/fileDiscoveryService.js');
const [root, git, gemini] = process.argv.slice(2);
const opts = { respectGitIgnore: git !== 'nogit', respectGeminiIgnore: gemini !== 'nogemini' };
const log = console.log;
console.log = console.info = console.debug = console.warn = () => {};	// it announces files it loads
const fds = new FileDiscoveryService(root, opts);
const paths = fs.readFileSync(0, 'utf8').split('\n').filter(Boolean);
log(fds.filterFilesWithReport(paths, opts).filteredPaths.join('\n'));
