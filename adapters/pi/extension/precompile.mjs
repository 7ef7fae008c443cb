// Compiles the run's permission extension into jiti's cache before round 1 (issue 32 §4):
//
//     node precompile.mjs <pi's program file> <cache folder> <file.ts>...
//
// Each file is transformed as pi 0.73.1's extension loader (core/extensions/loader.js) has jiti
// transform it when it imports the file — the jiti pi itself resolves, asynchronous, TypeScript,
// no JSX, jiti's default options — and written where jiti keeps its cache, under the name and
// with the closing line jiti looks for. Nothing is evaluated. The host copies the folder into the
// round's cache (<rt>/tmp/jiti) after clearing it, so that pi finds its extension compiled instead
// of loading Babel at every round. Any failure exits non-zero; the rounds then compile as before.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [program, cache, ...files] = process.argv.slice(2);
if (!program || !cache || files.length === 0) {
	process.stderr.write("usage: precompile.mjs <pi's program file> <cache folder> <file.ts>...\n");
	process.exit(2);
}
const { createJiti } = createRequire(program)("jiti");
const jiti = createJiti(program, { fsCache: cache, moduleCache: false });
for (const filename of files) {
	const source = readFileSync(filename, "utf8");
	jiti.transform({ filename, source, ts: true, async: true, jsx: false });
}
