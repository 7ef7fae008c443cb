/**
 * Concorde pi permission extension (seed 001; notes/harness.md §2; notes/pi.md).
 *
 * Generated per run into `<runtime>/control/permission.ts` by concorde_workers.adapters.pi.extension:
 * the POLICY line below is replaced by the run's policy JSON (Policy.to_json() plus programs,
 * limits, resultSchema, sandboxRuntime) and the sandbox-runtime import specifier by the
 * absolute path of `<sandbox-runtime package>/dist/index.js`. The pure decisions live beside it
 * in `pi_policy.ts`, the interpreter of the rows and reasons the policy embeds
 * (concorde_workers.domain.boundary.rules).
 *
 * - read/write/edit: the read table / write table before pi's tool runs (tool_call), again in the
 *   tool's execute, and once more on the exact path pi opens (its file operations; reads and
 *   writes re-judge the real path of the opened descriptor).
 * - bash/grep/find/ls: every command runs inside sandbox-runtime (no network, strict allowlist,
 *   the run's filesystem lists, no `*_API_KEY` variable); the search root is judged first.
 *   Without a working sandbox the four tools are refused: nothing ever runs unsandboxed.
 * - concorde_result: the worker result, `terminate: true`.
 * - turn and budget limits per run: once, `concorde-limit` entry + stderr line + abort; then every
 *   tool call is blocked.
 */

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as nodePath from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import {
	createBashToolDefinition,
	createEditToolDefinition,
	createFindToolDefinition,
	createGrepToolDefinition,
	createLsToolDefinition,
	createReadToolDefinition,
	createWriteToolDefinition,
	DEFAULT_MAX_BYTES,
	formatSize,
	truncateHead,
	truncateLine,
} from "@mariozechner/pi-coding-agent";
import { SandboxManager } from "@concorde/sandbox-runtime";
import * as P from "./pi_policy.ts";

const POLICY: P.Policy = {} as P.Policy;

// --- constants ------------------------------------------------------------------------------------

const RESULT_TEXT = "Result recorded; the session ends now.";
const LIMIT_ENTRY = "concorde-limit";
const NETWORK = { allowedDomains: [] as string[], deniedDomains: [] as string[], strictAllowlist: true };
const FILESYSTEM = {
	denyRead: [...POLICY.sandbox.denyRead],
	allowRead: [...POLICY.sandbox.allowRead],
	allowWrite: [...POLICY.sandbox.allowWrite],
	denyWrite: [...POLICY.sandbox.denyWrite],
};
const COMMAND_TOOLS = new Set(["bash", "grep", "find", "ls"]);

// The working directory and the worker's HOME, fixed when pi loads the extension.
const CWD = process.cwd();
const HOME = process.env.HOME ?? CWD;

// The PATH the worker's commands get (set inside the sandbox), kept as the host gave it. The pi
// process itself, sandbox-runtime's host-side lookups (which, bwrap, socat, rg) and the host-side
// part of every wrapped command (`bwrap ...`, resolved by name) get a PATH without any directory a
// worker could write: a program planted there would otherwise run outside the sandbox (the
// project interpreter's directory comes first on PATH and may lie in the worktree).
const WORKER_PATH = process.env.PATH ?? "";
function workerWritable(dir: string): boolean {
	const writable = [...FILESYSTEM.allowWrite, POLICY.worktree];
	const real = P.realpath(dir);
	return writable.some((w) => P.isWithin(dir, w) || P.isWithin(real, w));
}
const HOST_PATH = WORKER_PATH.split(":")
	.filter((d) => d.startsWith("/") && !workerWritable(d))
	.join(":");
process.env.PATH = HOST_PATH;

const BASH = ["/bin/bash", "/usr/bin/bash"].find((b) => fs.existsSync(b)) ?? "/bin/bash";

// --- denials --------------------------------------------------------------------------------------

class Denied extends Error {}

function denial(reason: string): Denied {
	return new Denied(P.withPrefix(POLICY, reason));
}

function couldNotDecide(error: unknown): string {
	const message = error instanceof Error ? error.message : String(error);
	return P.withPrefix(POLICY, P.reason(POLICY, "undecided", { actor: "extension", error: message }));
}

function check(decision: P.Decision): void {
	if (!decision.allowed) throw denial(decision.reason ?? "denied");
}

// --- limits (per run: earlier rounds are counted from the session on session_start) -------------

interface Stop {
	limit: "turns" | "budget";
	value: number;
	maximum: number;
}

const state = { turns: 0, cost: 0, stopped: null as Stop | null, recorded: false, abortPending: false };

function limitReason(stop: Stop): string {
	return P.withPrefix(POLICY, `the run reached its ${stop.limit} limit`);
}

function tidy(n: number): number {
	return Math.round(n * 1e9) / 1e9;
}

function requestAbort(ctx: { abort(): void } | undefined): void {
	if (!ctx) return;
	try {
		const r = ctx.abort() as unknown;
		if (r && typeof (r as Promise<void>).catch === "function") (r as Promise<void>).catch(() => {});
		state.abortPending = false;
	} catch {
		state.abortPending = true;
	}
}

function stop(pi: ExtensionAPI, ctx: { abort(): void } | undefined, s: Stop): void {
	if (state.stopped) return;
	state.stopped = s;
	if (!state.recorded) {
		state.recorded = true;
		try {
			pi.appendEntry(LIMIT_ENTRY, { limit: s.limit, value: s.value, maximum: s.maximum });
		} catch (e) {
			process.stderr.write(`[concorde-limit] could not append the entry: ${String(e)}\n`);
		}
		process.stderr.write(`[concorde-limit] ${JSON.stringify({ limit: s.limit, value: s.value, maximum: s.maximum })}\n`);
	}
	requestAbort(ctx); // never awaited: abort waits for idle, which waits for this handler
}

function checkLimits(pi: ExtensionAPI, ctx: { abort(): void } | undefined): void {
	const limits = POLICY.limits;
	if (!limits || state.stopped) return;
	if (state.turns > limits.maxTurns) {
		stop(pi, ctx, { limit: "turns", value: state.turns, maximum: limits.maxTurns });
	} else if (limits.maxBudgetUsd !== null && limits.maxBudgetUsd !== undefined && state.cost > limits.maxBudgetUsd) {
		stop(pi, ctx, { limit: "budget", value: tidy(state.cost), maximum: limits.maxBudgetUsd });
	}
}

function assistantCost(message: any): number {
	const total = message?.usage?.cost?.total;
	return typeof total === "number" && Number.isFinite(total) ? total : 0;
}

// --- the sandbox ----------------------------------------------------------------------------------

const sandbox = { ready: false, error: null as string | null, init: null as Promise<void> | null };

function sandboxConfig(): Record<string, unknown> {
	const config: Record<string, unknown> = { network: { ...NETWORK }, filesystem: { ...FILESYSTEM } };
	const rg = POLICY.programs?.rg;
	if (rg) config.ripgrep = { command: rg };
	return config;
}

async function initSandbox(): Promise<void> {
	if (sandbox.init) return sandbox.init;
	sandbox.init = (async () => {
		try {
			if (process.platform !== "linux" && process.platform !== "darwin") {
				throw new Error(`the platform ${process.platform} is not supported`);
			}
			if (!SandboxManager.isSupportedPlatform()) throw new Error("sandbox-runtime does not support this platform");
			await SandboxManager.initialize(sandboxConfig() as any);
			if (!SandboxManager.isSandboxingEnabled()) throw new Error("sandbox-runtime did not enable sandboxing");
			sandbox.ready = true;
		} catch (e) {
			sandbox.ready = false;
			sandbox.error = e instanceof Error ? e.message : String(e);
			process.stderr.write(`[concorde-sandbox] unavailable: ${sandbox.error}\n`);
		}
	})();
	return sandbox.init;
}

function sandboxRefusal(): string {
	return P.withPrefix(
		POLICY,
		`commands cannot run: the sandbox is unavailable (${sandbox.error ?? "it was not initialised"}); ` +
			"this run never runs a command outside the sandbox",
	);
}

async function requireSandbox(): Promise<void> {
	await initSandbox();
	if (!sandbox.ready) throw new Denied(sandboxRefusal());
}

function killGroup(pid: number | undefined): void {
	if (!pid) return;
	try {
		process.kill(-pid, "SIGKILL");
	} catch {
		// the group is gone
	}
}

interface RunOptions {
	onData?: (data: Buffer) => void;
	signal?: AbortSignal;
	timeout?: number;
	env?: NodeJS.ProcessEnv;
	onStdoutLine?: (line: string, stopNow: () => void) => void;
	onStderr?: (data: Buffer) => void;
	/** the worker's own command (bash): it gets the worker's PATH; the extension's own commands
	 * (grep, find, ls) keep the host's PATH without worker-writable directories */
	workerCommand?: boolean;
}

/** One command inside the sandbox: `bash -c <wrapped>` in its own process group; abort, timeout
 * and the end of the command kill the whole group. */
async function runSandboxed(command: string, cwd: string, opts: RunOptions = {}): Promise<{ exitCode: number | null }> {
	await requireSandbox();
	if (!fs.existsSync(cwd)) throw new Error(`Working directory does not exist: ${cwd}`);
	// The worker's PATH is set inside the sandbox; the host-side shell resolves `bwrap` with HOST_PATH.
	const inner = `export PATH=${sh(opts.workerCommand ? WORKER_PATH : HOST_PATH)}\n${command}`;
	const wrapped = await SandboxManager.wrapWithSandbox(inner, undefined, {
		network: { ...NETWORK },
		filesystem: { ...FILESYSTEM },
	} as any);
	const env = commandEnv(opts.env ?? process.env);
	return new Promise((resolve, reject) => {
		const child = spawn(BASH, ["-c", wrapped], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"], env });
		let timedOut = false;
		let stoppedEarly = false;
		let timer: NodeJS.Timeout | undefined;
		if (opts.timeout !== undefined && opts.timeout > 0) {
			timer = setTimeout(() => {
				timedOut = true;
				killGroup(child.pid);
			}, opts.timeout * 1000);
		}
		const onAbort = () => killGroup(child.pid);
		opts.signal?.addEventListener("abort", onAbort, { once: true });
		let pending = "";
		const stopNow = () => {
			stoppedEarly = true;
			killGroup(child.pid);
		};
		child.stdout?.on("data", (chunk: Buffer) => {
			opts.onData?.(chunk);
			if (opts.onStdoutLine && !stoppedEarly) {
				pending += chunk.toString("utf-8");
				let nl = pending.indexOf("\n");
				while (nl >= 0 && !stoppedEarly) {
					opts.onStdoutLine(pending.slice(0, nl), stopNow);
					pending = pending.slice(nl + 1);
					nl = pending.indexOf("\n");
				}
			}
		});
		child.stderr?.on("data", (chunk: Buffer) => {
			opts.onData?.(chunk);
			opts.onStderr?.(chunk);
		});
		const finish = () => {
			if (timer) clearTimeout(timer);
			opts.signal?.removeEventListener("abort", onAbort);
			killGroup(child.pid); // nothing the command started outlives it
			try {
				SandboxManager.cleanupAfterCommand();
			} catch {
				// best effort
			}
		};
		child.on("error", (err) => {
			finish();
			reject(err);
		});
		child.on("close", (code) => {
			if (opts.onStdoutLine && pending && !stoppedEarly) opts.onStdoutLine(pending, stopNow);
			finish();
			if (opts.signal?.aborted) reject(new Error("aborted"));
			else if (timedOut) reject(new Error(`timeout:${opts.timeout}`));
			else resolve({ exitCode: stoppedEarly ? 0 : code });
		});
	});
}

/** A sandboxed command's environment: pi's, without any model-service key (`*_API_KEY`, as
 * Claude Code's `sandbox.credentials` keeps ANTHROPIC_API_KEY from Bash), with HOST_PATH for the
 * host-side wrapper (the command itself gets its PATH inside the sandbox). */
function commandEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {};
	for (const [name, value] of Object.entries(base)) {
		if (!name.endsWith("_API_KEY")) env[name] = value;
	}
	env.PATH = HOST_PATH;
	return env;
}

function sh(s: string): string {
	return `'${s.replace(/'/g, `'\\''`)}'`;
}

// --- secure file operations (the exact path pi opens) --------------------------------------------

function fdRealpath(fd: number, fallback: string): string {
	try {
		return fs.readlinkSync(`/proc/self/fd/${fd}`);
	} catch {
		return P.realpath(fallback);
	}
}

/** Read a file judged by `judge` on its path, then again on the real path of the opened file. */
function secureRead(abs: string, judge: (realOfFd: string) => P.Decision, max?: number): Buffer {
	const fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
	try {
		check(judge(fdRealpath(fd, abs)));
		if (max === undefined) return fs.readFileSync(fd);
		const buffer = Buffer.alloc(max);
		const n = fs.readSync(fd, buffer, 0, max, 0);
		return buffer.subarray(0, n);
	} finally {
		fs.closeSync(fd);
	}
}

function readJudge(abs: string): (real: string) => P.Decision {
	check(P.judgeRead(POLICY, abs));
	return (real) => P.decideRead(POLICY, abs, real);
}

function writeJudge(abs: string): (real: string) => P.Decision {
	check(P.judgeWrite(POLICY, abs));
	const link = P.isLink(abs);
	return (real) => P.decideWrite(POLICY, abs, real, link);
}

function secureWrite(abs: string, content: string): void {
	const judge = writeJudge(abs);
	const fd = fs.openSync(abs, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NONBLOCK, 0o666);
	try {
		check(judge(fdRealpath(fd, abs)));
		if (!fs.fstatSync(fd).isFile()) throw new Error(`${abs} is not a regular file`);
		fs.ftruncateSync(fd, 0);
		fs.writeFileSync(fd, content, "utf-8");
	} finally {
		fs.closeSync(fd);
	}
}

function secureMkdir(dir: string): void {
	try {
		if (fs.statSync(dir).isDirectory()) return;
	} catch {
		// create it below
	}
	const resolved = P.realpath(dir);
	const decision = P.decideWrite(POLICY, dir, resolved, P.isLink(dir));
	const inside =
		P.isWithin(resolved, POLICY.worktree) &&
		!POLICY.git.some((g) => P.isWithin(resolved, g)) &&
		!P.relativeTo(resolved, POLICY.worktree).split("/").includes(".git") &&
		!POLICY.runtime.some((r) => P.isWithin(resolved, r));
	if (!decision.allowed && !(inside && decision.row === "not granted")) check(decision);
	fs.mkdirSync(dir, { recursive: true });
}

function sniffImage(head: Buffer): string | null {
	if (head.length >= 8 && head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
	if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
	if (head.length >= 6 && (head.subarray(0, 6).toString("latin1") === "GIF87a" || head.subarray(0, 6).toString("latin1") === "GIF89a")) return "image/gif";
	if (head.length >= 12 && head.subarray(0, 4).toString("latin1") === "RIFF" && head.subarray(8, 12).toString("latin1") === "WEBP") return "image/webp";
	return null;
}

const readOps = {
	access: async (abs: string) => {
		check(P.judgeRead(POLICY, abs));
		await fs.promises.access(abs, fs.constants.R_OK);
	},
	readFile: async (abs: string) => secureRead(abs, readJudge(abs)),
	detectImageMimeType: async (abs: string) => {
		const head = secureRead(abs, readJudge(abs), 16);
		return sniffImage(head);
	},
};

const editOps = {
	access: async (abs: string) => {
		check(P.judgeWrite(POLICY, abs));
		await fs.promises.access(abs, fs.constants.R_OK | fs.constants.W_OK);
	},
	readFile: async (abs: string) => secureRead(abs, writeJudge(abs)),
	writeFile: async (abs: string, content: string) => secureWrite(abs, content),
};

const writeOps = {
	mkdir: async (dir: string) => secureMkdir(dir),
	writeFile: async (abs: string, content: string) => secureWrite(abs, content),
};

// --- decisions on a tool call ---------------------------------------------------------------------

function targetOf(input: Record<string, unknown>, fallback?: string): string {
	const raw = input.path ?? input.file_path ?? fallback;
	if (typeof raw !== "string" || raw === "") {
		if (fallback !== undefined) return P.resolveArgument(fallback, CWD, HOME);
		throw new Error(P.reason(POLICY, "no file"));
	}
	return P.resolveArgument(raw, CWD, HOME);
}

type PathJudge = (policy: P.Policy, abs: string) => P.Decision;

/** The path-taking tools: which table judges their path argument, and its default (search roots
 * default to the working directory; read/write/edit must name a file). */
const PATH_TOOLS = new Map<string, { judge: PathJudge; fallback?: string }>([
	["read", { judge: P.judgeRead }],
	["write", { judge: P.judgeWrite }],
	["edit", { judge: P.judgeWrite }],
	["grep", { judge: P.judgeSearchRoot, fallback: "." }],
	["find", { judge: P.judgeSearchRoot, fallback: "." }],
	["ls", { judge: P.judgeSearchRoot, fallback: "." }],
]);

/** A path-taking tool's argument made absolute, judged by its table; throws the denial. */
function checkedPath(toolName: string, input: Record<string, unknown>): string {
	const tool = PATH_TOOLS.get(toolName);
	if (tool === undefined) throw new Error(`the tool ${toolName} takes no path`);
	const { judge, fallback } = tool;
	const abs = targetOf(input, fallback);
	check(judge(POLICY, abs));
	return abs;
}

/** The decision for one tool call: null when allowed (its path argument made absolute), else the
 * denial text with the prefix. Throws nothing. */
function decideCall(toolName: string, input: Record<string, unknown>): string | null {
	try {
		if (state.stopped) return limitReason(state.stopped);
		if (COMMAND_TOOLS.has(toolName) && !sandbox.ready) return sandboxRefusal();
		if (PATH_TOOLS.has(toolName)) {
			input.path = checkedPath(toolName, input);
			return null;
		}
		if (toolName === "bash" || toolName === "concorde_result") return null;
		return P.withPrefix(POLICY, `the tool ${toolName} is not part of this run`);
	} catch (e) {
		return e instanceof Denied ? e.message : couldNotDecide(e);
	}
}

// --- grep, find, ls inside the sandbox ------------------------------------------------------------

function grepTool(cwd: string) {
	const base = createGrepToolDefinition(cwd);
	return {
		...base,
		executionMode: "sequential" as const,
		async execute(_id: string, params: any, signal?: AbortSignal) {
			const root = checkedPath("grep", params);
			await requireSandbox();
			let isDirectory = true;
			try {
				isDirectory = fs.statSync(root).isDirectory();
			} catch {
				throw new Error(`Path not found: ${root}`);
			}
			const limit = Math.max(1, params.limit ?? 100);
			const context = params.context && params.context > 0 ? Math.floor(params.context) : 0;
			const rg = POLICY.programs?.rg || "rg";
			// --no-messages: a file the sandbox withholds is simply not searched
			const args = ["--json", "--line-number", "--color=never", "--hidden", "--no-messages"];
			if (params.ignoreCase) args.push("--ignore-case");
			if (params.literal) args.push("--fixed-strings");
			if (params.glob) args.push("--glob", String(params.glob));
			if (context > 0) args.push("--context", String(context));
			args.push("--", String(params.pattern), root);
			const formatPath = (file: string) => {
				if (isDirectory) {
					const r = nodePath.relative(root, file);
					if (r && !r.startsWith("..")) return r;
				}
				return nodePath.basename(file);
			};
			const lines: string[] = [];
			let matches = 0;
			let limitReached = false;
			let truncatedLines = false;
			let stderr = "";
			const { exitCode } = await runSandboxed([rg, ...args].map(sh).join(" "), CWD, {
				signal,
				onStderr: (d) => {
					if (stderr.length < 4096) stderr += d.toString("utf-8");
				},
				onStdoutLine: (line, stopNow) => {
					let ev: any;
					try {
						ev = JSON.parse(line);
					} catch {
						return;
					}
					if (ev.type !== "match" && ev.type !== "context") return;
					const file = ev.data?.path?.text;
					const n = ev.data?.line_number;
					if (typeof file !== "string" || typeof n !== "number") return;
					const text = String(ev.data?.lines?.text ?? "").replace(/\r?\n$/, "").replace(/\r/g, "");
					const { text: t, wasTruncated } = truncateLine(text);
					if (wasTruncated) truncatedLines = true;
					if (ev.type === "match") {
						matches++;
						lines.push(`${formatPath(file)}:${n}: ${t}`);
						if (matches >= limit) {
							limitReached = true;
							stopNow();
						}
					} else {
						lines.push(`${formatPath(file)}-${n}- ${t}`);
					}
				},
			});
			if (!limitReached && exitCode !== 0 && exitCode !== 1 && !(exitCode === 2 && !stderr.trim())) {
				throw new Error(stderr.trim() || `ripgrep exited with code ${exitCode}`);
			}
			if (matches === 0) return { content: [{ type: "text" as const, text: "No matches found" }], details: undefined };
			const truncation = truncateHead(lines.join("\n"), { maxLines: Number.MAX_SAFE_INTEGER });
			let output = truncation.content;
			const details: Record<string, unknown> = {};
			const notices: string[] = [];
			if (limitReached) {
				notices.push(`${limit} matches limit reached. Use limit=${limit * 2} for more, or refine pattern`);
				details.matchLimitReached = limit;
			}
			if (truncation.truncated) {
				notices.push(`${formatSize(DEFAULT_MAX_BYTES)} limit reached`);
				details.truncation = truncation;
			}
			if (truncatedLines) {
				notices.push("Some lines truncated. Use read tool to see full lines");
				details.linesTruncated = true;
			}
			if (notices.length > 0) output += `\n\n[${notices.join(". ")}]`;
			return {
				content: [{ type: "text" as const, text: output }],
				details: Object.keys(details).length > 0 ? details : undefined,
			};
		},
	};
}

async function sandboxLines(command: string, signal?: AbortSignal): Promise<{ code: number | null; text: string }> {
	const chunks: Buffer[] = [];
	let size = 0;
	const { exitCode } = await runSandboxed(command, CWD, {
		signal,
		onData: (d) => {
			if (size < 8 * 1024 * 1024) {
				chunks.push(d);
				size += d.length;
			}
		},
	});
	return { code: exitCode, text: Buffer.concat(chunks).toString("utf-8") };
}

function findTool(cwd: string) {
	const ops = {
		exists: (abs: string) => fs.existsSync(abs),
		glob: async (pattern: string, searchPath: string, options: { ignore: string[]; limit: number }) => {
			const fd = POLICY.programs?.fd || "fd";
			// (no --no-require-git: fd 8 lacks it; inside the sandbox the worktree's .git is hidden anyway)
			const args = ["--glob", "--color=never", "--hidden", "--exclude", ".git", "--exclude", "node_modules"];
			let effective = pattern;
			if (pattern.includes("/")) {
				args.push("--full-path");
				if (!pattern.startsWith("/") && !pattern.startsWith("**/") && pattern !== "**") effective = `**/${pattern}`;
			}
			args.push("--max-results", String(Math.max(1, options.limit)), "--", effective, searchPath);
			// stderr is discarded so that only paths come back
			const { text } = await sandboxLines(`${[fd, ...args].map(sh).join(" ")} 2>/dev/null`);
			return text
				.split("\n")
				.map((l) => l.replace(/\r$/, "").trim())
				.filter((l) => l.length > 0);
		},
	};
	const base = createFindToolDefinition(cwd, { operations: ops });
	return {
		...base,
		executionMode: "sequential" as const,
		async execute(id: string, params: any, signal: AbortSignal | undefined, onUpdate: any, ctx: any) {
			const root = checkedPath("find", params);
			await requireSandbox();
			return base.execute(id, { ...params, path: root }, signal, onUpdate, ctx);
		},
	};
}

function lsTool(cwd: string) {
	const base = createLsToolDefinition(cwd);
	return {
		...base,
		executionMode: "sequential" as const,
		async execute(id: string, params: any, signal: AbortSignal | undefined, onUpdate: any, ctx: any) {
			const root = checkedPath("ls", params);
			await requireSandbox();
			// One sandboxed listing: the kind of the root, then `<type> <name>` per entry (types
			// with links followed), NUL-separated; the sandbox hides what the grant withholds.
			const q = sh(root);
			const script =
				`if [ -d ${q} ]; then printf 'D\\0'; exec find -H ${q} -mindepth 1 -maxdepth 1 -printf '%Y %f\\0' 2>/dev/null; ` +
				`elif [ -e ${q} ]; then printf 'F\\0'; else printf 'N\\0'; fi`;
			const { text } = await sandboxLines(script, signal);
			const parts = text.split("\0").filter((s) => s.length > 0);
			const kind = parts.shift() ?? "N";
			const types = new Map<string, string>();
			for (const p of parts) types.set(p.slice(2), p.slice(0, 1));
			const dirNorm = nodePath.resolve(root);
			const ops = {
				exists: () => kind !== "N",
				stat: (abs: string) => {
					if (nodePath.resolve(abs) === dirNorm) return { isDirectory: () => kind === "D" };
					const t = types.get(nodePath.basename(abs));
					if (t === undefined) throw new Error(`cannot stat ${abs}`);
					return { isDirectory: () => t === "d" };
				},
				readdir: () => [...types.keys()],
			};
			return createLsToolDefinition(cwd, { operations: ops }).execute(id, { ...params, path: root }, signal, onUpdate, ctx);
		},
	};
}

// --- the extension --------------------------------------------------------------------------------

export default function concordePermission(pi: ExtensionAPI) {
	const cwd = CWD;

	// read / write / edit: checked before pi's tool, in its execute, and on the path it opens.
	const fileTools = [
		createReadToolDefinition(cwd, { operations: readOps }),
		createWriteToolDefinition(cwd, { operations: writeOps }),
		createEditToolDefinition(cwd, { operations: editOps }),
	];
	for (const base of fileTools) {
		pi.registerTool({
			...base,
			async execute(id: string, params: any, signal: any, onUpdate: any, ctx: any) {
				const abs = checkedPath(base.name, params);
				return (base.execute as any)(id, { ...params, path: abs }, signal, onUpdate, ctx);
			},
		} as any);
	}

	// bash: the command inside the sandbox, one at a time.
	const bashBase = createBashToolDefinition(cwd, {
		operations: {
			exec: (command: string, dir: string, o: any) => runSandboxed(command, dir, { ...o, workerCommand: true }),
		},
	});
	pi.registerTool({
		...bashBase,
		executionMode: "sequential",
		async execute(id: string, params: any, signal: any, onUpdate: any, ctx: any) {
			if (state.stopped) throw new Denied(limitReason(state.stopped));
			await requireSandbox();
			return bashBase.execute(id, params, signal, onUpdate, ctx);
		},
	} as any);

	pi.registerTool(grepTool(cwd) as any);
	pi.registerTool(findTool(cwd) as any);
	pi.registerTool(lsTool(cwd) as any);

	// concorde_result: the worker result; ends the session.
	pi.registerTool({
		name: "concorde_result",
		label: "concorde_result",
		description:
			"Record your structured worker result and end your session. Call it exactly once, as your last action; " +
			"its arguments are the worker result.",
		promptSnippet: "Record the structured worker result and end the session (call exactly once, last)",
		parameters: (POLICY.resultSchema ?? { type: "object" }) as any,
		async execute(_id: string, params: unknown) {
			return { content: [{ type: "text" as const, text: RESULT_TEXT }], details: params, terminate: true };
		},
	} as any);

	// A user `!command` (interactive/RPC only) runs in the sandbox too.
	pi.on("user_bash" as any, (() => ({
		operations: {
			exec: (command: string, dir: string, o: any) => runSandboxed(command, dir, { ...o, workerCommand: true }),
		},
	})) as any);

	pi.on("tool_call", async (event: any) => {
		if (COMMAND_TOOLS.has(String(event.toolName))) await initSandbox();
		const reason = decideCall(String(event.toolName), event.input ?? {});
		return reason === null ? undefined : { block: true, reason };
	});

	pi.on("session_start", async (_event: any, ctx: any) => {
		try {
			const entries: any[] = ctx?.sessionManager?.getEntries?.() ?? [];
			for (const entry of entries) {
				if (entry?.type === "message" && entry.message?.role === "assistant") {
					state.turns += 1;
					state.cost += assistantCost(entry.message);
				} else if (entry?.type === "custom" && entry.customType === LIMIT_ENTRY) {
					state.recorded = true;
					const d = entry.data ?? {};
					if (d.limit === "turns" || d.limit === "budget") {
						state.stopped = { limit: d.limit, value: Number(d.value), maximum: Number(d.maximum) };
					}
				}
			}
			checkLimits(pi, undefined);
		} catch (e) {
			process.stderr.write(`[concorde-limit] could not count the earlier rounds: ${String(e)}\n`);
		}
		await initSandbox();
	});

	// A run already at its limit stops before the model is asked again.
	pi.on("turn_start", (_event: any, ctx: any) => {
		if (state.stopped || state.abortPending) requestAbort(ctx);
	});

	pi.on("message_end", (event: any, ctx: any) => {
		const message = event?.message;
		if (message?.role !== "assistant") return;
		state.cost += assistantCost(message);
		checkLimits(pi, ctx);
	});

	pi.on("turn_end", (_event: any, ctx: any) => {
		state.turns += 1;
		checkLimits(pi, ctx);
	});

	pi.on("session_shutdown", async () => {
		try {
			await SandboxManager.reset();
		} catch {
			// the process exits anyway
		}
	});
}

// The limit and sandbox state, read by the extension's tests (tests/fakes/pi_extension_driver.mjs).
export const __test = { state, sandbox };
