// Test driver for the generated pi permission extension (tests/integration/test_pi_*.py).
//
// Loads control/permission.ts or control/pi_policy.ts with jiti, the way pi 0.73.1 loads an
// extension (core/extensions/loader.js: jiti with aliases for pi's own packages). With a file
// name, answers the one JSON request it holds, written to the request's `output` file:
//
//   {"mode": "extension", "control": <dir>, "cwd": <dir>, "priorEntries": [...], "steps": [...]}
//
// A call step may name `expireTimeoutWhen` (see expireTimeoutWhen below).
//
// `node pi_extension_driver.mjs --serve <repo> <pi_policy.ts>` loads pi_policy.ts once and
// answers batches: one JSON line {"policy": {...}, "queries": [...]} read from stdin, one line
// {"answers": [...]} written to stdout, until stdin ends (tests/fakes/pi_policy_server.py).
//
// No network, no model: the extension's own tools and handlers run against the real file system
// and the real sandbox-runtime.

import * as fs from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const serving = process.argv[2] === "--serve";
const request = serving ? { repo: process.argv[3] } : JSON.parse(fs.readFileSync(process.argv[2], "utf-8"));
const repo = request.repo;
const piPackage = path.join(repo, "node_modules/@mariozechner/pi-coding-agent");
const requireFromPi = createRequire(path.join(piPackage, "package.json"));
const { createJiti } = await import(pathToFileURL(path.join(repo, "node_modules/jiti/lib/jiti.mjs")).href);

const alias = {
	"@mariozechner/pi-coding-agent": path.join(piPackage, "dist/index.js"),
	typebox: requireFromPi.resolve("typebox"),
	"typebox/compile": requireFromPi.resolve("typebox/compile"),
	"typebox/value": requireFromPi.resolve("typebox/value"),
};
const jiti = createJiti(import.meta.url, { fsCache: false, moduleCache: false, alias });

function out(value) {
	// a file, not stdout: process.exit() may cut a long write to a pipe short
	fs.writeFileSync(request.output, JSON.stringify(value));
}

function answer(P, policy, q) {
	try {
		if (q.kind === "read") return P.judgeRead(policy, q.path);
		if (q.kind === "write") return P.judgeWrite(policy, q.path);
		if (q.kind === "search") return P.judgeSearchRoot(policy, q.path);
		if (q.kind === "realpath") return { path: P.realpath(q.path) };
		if (q.kind === "resolve") return { path: P.resolveArgument(q.arg, q.cwd, q.home) };
		if (q.kind === "pure-read") return P.decideRead(policy, q.path, q.real ?? null);
		if (q.kind === "pure-write") return P.decideWrite(policy, q.given, q.resolved, q.link ?? false);
		if (q.kind === "pure-search") return P.decideSearchRoot(policy, q.path, q.real ?? null, q.isDirectory ?? true);
		if (q.kind === "pure-guard") {
			return P.decideSearch(policy, q.path, q.real ?? null, q.isDirectory ?? true, q.pattern ?? null, q.glob ?? null);
		}
		if (q.kind === "vocabulary") return P.VOCABULARY;
		if (q.kind === "reason") return { reason: P.reason(policy, q.key, q.values) };
		return { error: `unknown query ${q.kind}` };
	} catch (e) {
		return { error: String(e?.message ?? e) };
	}
}

if (serving) {
	const P = await jiti.import(process.argv[4]);
	const { createInterface } = await import("node:readline");
	for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
		const batch = JSON.parse(line);
		const answers = batch.queries.map((q) => answer(P, batch.policy, q));
		// one line per batch; awaited, so a long answer is never cut short at exit
		await new Promise((done) => process.stdout.write(JSON.stringify({ answers }) + "\n", done));
	}
	process.exit(0);
}


// --- mode "extension" ----------------------------------------------------------------------------

process.chdir(request.cwd);
const mod = await jiti.import(path.join(request.control, "permission.ts"));
const factory = mod.default;
const tools = new Map();
const handlers = new Map();
const entries = [];
let aborts = 0;
const pi = {
	registerTool: (t) => tools.set(t.name, t),
	on: (name, h) => {
		if (!handlers.has(name)) handlers.set(name, []);
		handlers.get(name).push(h);
	},
	appendEntry: (customType, data) => entries.push({ type: "custom", customType, data }),
	registerFlag: () => {},
	getFlag: () => undefined,
};
const ctx = {
	cwd: request.cwd,
	hasUI: false,
	ui: { notify() {}, setStatus() {} },
	sessionManager: { getEntries: () => request.priorEntries ?? [] },
	abort: () => {
		aborts += 1;
	},
	isIdle: () => true,
	signal: undefined,
};
factory(pi);

async function emit(name, event) {
	let result;
	for (const h of handlers.get(name) ?? []) {
		const r = await h(event, ctx);
		if (r !== undefined) result = r;
	}
	return result;
}

// A call step's `expireTimeoutWhen: <named pipe>`: the tool's own timeout (the timer of exactly
// `input.timeout` seconds) passes once a writer has opened and closed that pipe, an event of the
// command's own, instead of after the seconds, which stay the bound (tests/timing.py Deadline).
// The tool's timeout path then runs as it would: its timer's function, its kill of the tree.
function expireTimeoutWhen(fifo, seconds) {
	const realSet = globalThis.setTimeout;
	const realClear = globalThis.clearTimeout;
	const pending = new Map(); // the tool's timers not yet fired or cleared: handle -> fire
	let happened = false;
	const fireAll = () => {
		happened = true;
		for (const [handle, fire] of pending) {
			pending.delete(handle);
			realClear(handle);
			fire();
		}
	};
	fs.promises.readFile(fifo).then(fireAll, fireAll); // resolves once the writer closed it
	globalThis.setTimeout = (fn, ms, ...args) => {
		if (ms !== seconds * 1000) return realSet(fn, ms, ...args);
		const fire = () => fn(...args);
		const handle = realSet(() => {
			pending.delete(handle);
			fire();
		}, ms);
		pending.set(handle, fire);
		if (happened) fireAll();
		return handle;
	};
	globalThis.clearTimeout = (handle) => {
		pending.delete(handle);
		realClear(handle);
	};
	return () => {
		globalThis.setTimeout = realSet;
		globalThis.clearTimeout = realClear;
	};
}

function text(result) {
	return (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const results = [];
for (const step of request.steps) {
	if (step.op === "event") {
		await emit(step.name, step.event ?? {});
		results.push({ op: "event", name: step.name });
		continue;
	}
	if (step.op === "state") {
		results.push({ op: "state", state: mod.__test.state, sandbox: mod.__test.sandbox });
		continue;
	}
	// op "call": the tool_call handlers, then (when not blocked) the tool itself
	const input = JSON.parse(JSON.stringify(step.input ?? {}));
	const event = { type: "tool_call", toolName: step.tool, toolCallId: `call_${results.length}`, input };
	let blocked;
	try {
		// skipCheck: call the tool without the tool_call handlers (its own checks must hold)
		blocked = step.skipCheck ? undefined : await emit("tool_call", event);
	} catch (e) {
		blocked = { block: true, reason: String(e?.message ?? e), threw: true };
	}
	if (blocked?.block) {
		results.push({ op: "call", tool: step.tool, blocked: true, reason: blocked.reason, input });
		continue;
	}
	if (step.checkOnly) {
		results.push({ op: "call", tool: step.tool, blocked: false, input });
		continue;
	}
	const tool = tools.get(step.tool);
	const restore = step.expireTimeoutWhen ? expireTimeoutWhen(step.expireTimeoutWhen, input.timeout) : () => {};
	try {
		const controller = new AbortController();
		const r = await tool.execute(event.toolCallId, input, controller.signal, undefined, ctx);
		results.push({ op: "call", tool: step.tool, blocked: false, ok: true, text: text(r), details: r?.details ?? null, terminate: r?.terminate ?? false, input });
	} catch (e) {
		results.push({ op: "call", tool: step.tool, blocked: false, ok: false, error: String(e?.message ?? e), input });
	} finally {
		restore();
	}
}
await emit("session_shutdown", {});
out({ results, entries, aborts, tools: [...tools.keys()].sort(), handlers: [...handlers.keys()].sort() });
process.exit(0);
