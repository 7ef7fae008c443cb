/**
 * Concorde pi permission extension: the pure path decisions (notes/harness.md §2.4-§2.6).
 *
 * A line-by-line port of `concorde_workers.domain.boundary.policy` (decide_read, decide_write,
 * decide_search_root): the same rows, in the same order. The reasons are not written here: each
 * is filled from the table the policy embeds (`policy.reasons`, concorde_workers.domain.boundary.rules),
 * exactly as the domain fills it.
 * tests/integration/test_pi_extension_parity.py runs this file under jiti on the same paths as
 * the Python domain and requires identical decisions, rows and reasons. Keep them in step.
 *
 * Node built-ins only (no pi, no sandbox-runtime), so the host's tests can load it alone. The
 * generated run copies this file, unchanged, to `<runtime>/control/pi_policy.ts`.
 */

import * as fs from "node:fs";
import * as nodePath from "node:path";
import { fileURLToPath } from "node:url";

const RUNTIME_PREFIX = "concorde-";
const RUNTIME_NAME = /^concorde-[0-9a-f]{6}-[A-Za-z0-9_]{1,32}$/; // domain.boundary.hidden
/** domain.boundary.rules.PLACEHOLDER */
const PLACEHOLDER = /\{([a-z_]+)\}/g;

export interface SandboxLists {
	denyRead: string[];
	allowRead: string[];
	allowWrite: string[];
	denyWrite: string[];
}

/** The embedded policy: Policy.to_json() of the domain, plus what the backend adds. */
export interface Policy {
	worktree: string;
	rw: string[];
	ro: string[];
	names: string[];
	git: string[];
	runtime: string[];
	hidden: string[];
	own: string[];
	primary: string;
	userHome: string;
	boundaries: string[];
	runtimeRoot: string;
	runtimeDirectory: string;
	temporaryRoots: string[];
	runDirectories: string[];
	credentials: string[];
	reasons: Record<string, string>;
	sandbox: SandboxLists;
	programs?: { rg: string | null; fd: string | null };
	limits?: { maxTurns: number; maxBudgetUsd: number | null };
	resultSchema?: Record<string, unknown>;
	sandboxRuntime?: string;
	[key: string]: unknown;
}

export interface Decision {
	allowed: boolean;
	reason: string | null;
	row: string;
}

type Level = "rw" | "ro" | "names";
interface Entry {
	path: string;
	level: Level;
	isDirectory: boolean;
	bare: string;
}

const READABLE: ReadonlySet<Level | null> = new Set<Level | null>(["ro", "rw"]);

function allow(row: string): Decision {
	return { allowed: true, reason: null, row };
}

function deny(row: string, reason: string): Decision {
	return { allowed: false, reason, row };
}

/** Reason `key` of the embedded table filled as domain.boundary.rules.fill fills it: each placeholder
 * replaced once by its value, a value never scanned again; a missing key or value throws. */
export function reason(policy: Policy, key: string, values: Record<string, string> = {}): string {
	const template = policy.reasons[key];
	if (typeof template !== "string") throw new Error(`the policy holds no reason ${key}`);
	return template.replace(PLACEHOLDER, (_, name: string) => {
		const value = values[name];
		if (typeof value !== "string") throw new Error(`the reason ${key} needs ${name}`);
		return value;
	});
}

/** A denial as the worker sees it (the table's `denial` form around the reason). */
export function withPrefix(policy: Policy, why: string): string {
	return reason(policy, "denial", { reason: why });
}

// --- posixpath, exactly as Python's -----------------------------------------------------------

/** Python's posixpath.normpath. */
export function normpath(path: string): string {
	if (path === "") return ".";
	let initial = path.startsWith("/") ? 1 : 0;
	if (initial && path.startsWith("//") && !path.startsWith("///")) initial = 2;
	const out: string[] = [];
	for (const comp of path.split("/")) {
		if (comp === "" || comp === ".") continue;
		if (comp !== ".." || (!initial && out.length === 0) || (out.length > 0 && out[out.length - 1] === "..")) {
			out.push(comp);
		} else if (out.length > 0) {
			out.pop();
		}
	}
	const joined = "/".repeat(initial) + out.join("/");
	return joined || ".";
}

function rstripSlash(s: string): string {
	return s.replace(/\/+$/, "");
}

function stripSlashes(s: string): string {
	return s.replace(/^\/+/, "").replace(/\/+$/, "");
}

/** domain.boundary.paths.is_within */
export function isWithin(path: string, root: string): boolean {
	const p = normpath(path);
	const r = normpath(root);
	return p === r || p.startsWith(rstripSlash(r) + "/");
}

/** posixpath.relpath(normpath(path), normpath(root)) for absolute paths; "" for the root. */
export function relativeTo(path: string, root: string): string {
	const p = normpath(path).split("/").filter((c) => c !== "");
	const r = normpath(root).split("/").filter((c) => c !== "");
	let i = 0;
	while (i < p.length && i < r.length && p[i] === r[i]) i++;
	const rel = [...Array(r.length - i).fill(".."), ...p.slice(i)];
	return rel.length === 0 ? "" : rel.join("/");
}

// --- the grant ------------------------------------------------------------------------------------

function entries(policy: Policy): Entry[] {
	const out: Entry[] = [];
	for (const level of ["names", "ro", "rw"] as Level[]) {
		for (const path of (policy[level] as string[]) ?? []) {
			out.push({ path, level, isDirectory: path.endsWith("/"), bare: rstripSlash(path) });
		}
	}
	return out;
}

/** Grant.level_of: the exact entry, else the longest directory entry above. */
export function levelOf(policy: Policy, relIn: string): Level | null {
	const rel = stripSlashes(relIn);
	let best: Entry | null = null;
	for (const e of entries(policy)) {
		if (e.bare === rel && !e.isDirectory) return e.level;
		const covers = e.bare === rel || (e.isDirectory && rel.startsWith(e.path));
		if (covers && (best === null || e.bare.length > best.bare.length)) best = e;
	}
	return best === null ? null : best.level;
}

function dirLevel(policy: Policy, rel: string): Level | null {
	let best: Entry | null = null;
	for (const e of entries(policy)) {
		const covers = e.isDirectory && (e.bare === rel || rel.startsWith(e.path));
		if (covers && (best === null || e.bare.length > best.bare.length)) best = e;
	}
	return best === null ? null : best.level;
}

function entriesBelow(policy: Policy, rel: string): Entry[] {
	const prefix = rel ? rel + "/" : "";
	return entries(policy).filter((e) => e.bare !== rel && e.bare.startsWith(prefix));
}

function inWorktree(p: Policy, path: string): boolean {
	return isWithin(path, p.worktree);
}

function rel(p: Policy, path: string): string {
	return relativeTo(path, p.worktree);
}

function inGit(p: Policy, path: string): boolean {
	if (p.git.some((g) => isWithin(path, g))) return true;
	return inWorktree(p, path) && rel(p, path).split("/").includes(".git");
}

function inRuntimePath(p: Policy, path: string): boolean {
	return p.runtime.some((r) => isWithin(path, r));
}

function shown(p: Policy, path: string): string {
	return rel(p, path) || p.worktree;
}

// --- what is hidden always (domain.boundary.hidden) ------------------------------------------------------

/** domain.boundary.hidden.Hidden.other_run. */
function otherRun(p: Policy, path: string): boolean {
	if (isWithin(path, p.runtimeDirectory)) return false;
	if (isWithin(path, p.runtimeRoot)
		&& relativeTo(path, p.runtimeRoot).split("/")[0].startsWith(RUNTIME_PREFIX)) return true;
	return p.temporaryRoots.some((root) => isWithin(path, root)
		&& relativeTo(path, root).split("/").some((part) => RUNTIME_NAME.test(part)));
}

/** Policy.hidden_always: another run's runtime directory, a run directory, a credential file. */
function hiddenAlways(p: Policy, pathIn: string): Decision | null {
	const path = normpath(pathIn);
	if (p.runDirectories.some((d) => isWithin(path, d))) return deny("run directory", reason(p, "run directory", { path }));
	if (otherRun(p, path)) return deny("other run", reason(p, "other run", { path }));
	if (p.credentials.some((c) => isWithin(path, c))) return deny("credentials", reason(p, "credentials", { path }));
	return null;
}

// --- read table (§2.4) -------------------------------------------------------------------------

type Row = (p: Policy, path: string) => Decision | null;

const READ_TABLE: Row[] = [
	(p, path) => (inGit(p, path) ? deny("git", reason(p, "git")) : null),
	(p, path) => hiddenAlways(p, path),
	(p, path) => (inRuntimePath(p, path) ? allow("runtime path") : null),
	(p, path) => (inWorktree(p, path) && READABLE.has(levelOf(p, rel(p, path))) ? allow("ro or rw") : null),
	(p, path) =>
		inWorktree(p, path) && levelOf(p, rel(p, path)) === "names"
			? deny("names", reason(p, "names", { path: shown(p, path) }))
			: null,
	(p, path) => (inWorktree(p, path) ? deny("not granted", reason(p, "not granted", { path: shown(p, path) })) : null),
	(p, path) => (p.hidden.some((h) => isWithin(path, h)) ? deny("host", reason(p, "host", { path })) : null),
	(p, path) => (isWithin(path, "/proc") ? deny("processes", reason(p, "processes", { path })) : null),
	(p, path) => (p.own.some((o) => isWithin(path, o)) ? allow("own directory") : null),
	(p, path) => (p.boundaries.some((b) => isWithin(path, b)) ? deny("boundary", reason(p, "boundary", { path })) : null),
	() => allow("elsewhere"),
];

function first(policy: Policy, path: string): Decision {
	for (const row of READ_TABLE) {
		const d = row(policy, path);
		if (d !== null) return d;
	}
	throw new Error("the last row of a table always decides");
}

/** decide_read: the lexical path and, when given, its real path must both pass. */
export function decideRead(policy: Policy, path: string, real: string | null = null): Decision {
	const lexical = first(policy, normpath(path));
	if (!lexical.allowed || real === null) return lexical;
	return first(policy, normpath(real));
}

// --- write table (§1.4, §2.5) --------------------------------------------------------------------

/** decide_write: judged on the fully resolved target (final link included). */
export function decideWrite(policy: Policy, given: string, resolvedIn: string, givenIsLink = false): Decision {
	const p = policy;
	const resolved = normpath(resolvedIn);
	if (p.git.some((g) => isWithin(resolved, g))) return deny("git", reason(p, "git"));
	const hidden = hiddenAlways(p, resolved);
	if (hidden !== null) return hidden;
	if (!inWorktree(p, resolved)) {
		if (givenIsLink) return deny("outside", reason(p, "outside link", { given, resolved }));
		return deny("outside", reason(p, "outside", { given }));
	}
	if (rel(p, resolved).split("/").includes(".git")) return deny("git", reason(p, "git"));
	const r = shown(p, resolved);
	const named = givenIsLink ? reason(p, "link target", { path: r, link: given }) : r;
	if (inRuntimePath(p, resolved)) return deny("runtime path", reason(p, "runtime path", { path: named }));
	const level = levelOf(p, rel(p, resolved));
	if (level === "rw") return allow("rw");
	if (level === "ro") return deny("ro", reason(p, "ro", { path: named }));
	if (level === "names") return deny("names", reason(p, "names", { path: named }));
	return deny("not granted", reason(p, "not bound", { path: named }));
}

// --- search/listing roots (§2.6) ------------------------------------------------------------------

function searchOne(p: Policy, root: string): Decision {
	if (!inWorktree(p, root)) return first(p, root);
	if (inGit(p, root)) return deny("git", reason(p, "git"));
	const hidden = hiddenAlways(p, root);
	if (hidden !== null) return hidden;
	if (inRuntimePath(p, root) || p.runtime.some((r) => isWithin(r, root))) return allow("runtime path");
	const r = rel(p, root);
	const above = READABLE.has(dirLevel(p, r)) || READABLE.has(levelOf(p, r));
	const below = entriesBelow(p, r).some((e) => READABLE.has(e.level));
	if (above || below) return allow("readable at, below or above");
	return deny("nothing readable", reason(p, "nothing readable", { path: shown(p, root) }));
}

/** decide_search_root: a directory in the worktree by §2.6, anything else by the read table. */
export function decideSearchRoot(
	policy: Policy,
	root: string,
	real: string | null = null,
	isDirectory = true,
): Decision {
	const one = (path: string): Decision => {
		const n = normpath(path);
		return isDirectory ? searchOne(policy, n) : first(policy, n);
	};
	const lexical = one(root);
	return !lexical.allowed || real === null ? lexical : one(real);
}

// --- the file system side (the only I/O here) ---------------------------------------------------

/** Python's os.path.realpath(path) (strict=False): every link resolved, the final one included,
 * also when its target does not exist; a missing component is kept as written; a loop stops. */
export function realpath(path: string): string {
	const seen = new Map<string, string | null>();
	const [result] = joinRealpath("", path, seen);
	return normpath(result);
}

function joinRealpath(pathIn: string, restIn: string, seen: Map<string, string | null>): [string, boolean] {
	let path = pathIn;
	let rest = restIn;
	if (rest.startsWith("/")) {
		rest = rest.slice(1);
		path = "/";
	}
	while (rest) {
		const i = rest.indexOf("/");
		const name = i < 0 ? rest : rest.slice(0, i);
		rest = i < 0 ? "" : rest.slice(i + 1);
		if (!name || name === ".") continue;
		if (name === "..") {
			if (path) {
				const parent = nodePath.posix.dirname(path);
				const last = nodePath.posix.basename(path);
				path = last === ".." ? nodePath.posix.join(parent, "..", "..") : parent;
			} else {
				path = "..";
			}
			continue;
		}
		const newpath = path ? nodePath.posix.join(path, name) : name;
		let isLink = false;
		try {
			isLink = fs.lstatSync(newpath).isSymbolicLink();
		} catch {
			isLink = false;
		}
		if (!isLink) {
			path = newpath;
			continue;
		}
		if (seen.has(newpath)) {
			const known = seen.get(newpath);
			if (known !== null && known !== undefined) {
				path = known;
				continue;
			}
			return [nodePath.posix.join(newpath, rest), false];
		}
		seen.set(newpath, null);
		const [resolved, ok] = joinRealpath(path, fs.readlinkSync(newpath), seen);
		path = resolved;
		if (!ok) return [nodePath.posix.join(path, rest), false];
		seen.set(newpath, path);
	}
	return [path, true];
}

export function isLink(path: string): boolean {
	try {
		return fs.lstatSync(path).isSymbolicLink();
	} catch {
		return false;
	}
}

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;

/** A tool's path argument as pi resolves it (core/tools/path-utils.js resolveToCwd), plus
 * file:// URLs: one leading `@` dropped, Unicode spaces made plain, `~`/`~/` → the worker's HOME,
 * relative → against the working directory. An absolute argument is kept as written (pi passes it
 * to the file system unnormalised; the decisions judge its normalised form and its real path). */
export function resolveArgument(arg: string, cwd: string, home: string): string {
	if (typeof arg !== "string") throw new Error("the tool call names no path");
	let s = arg.startsWith("@") ? arg.slice(1) : arg;
	s = s.replace(UNICODE_SPACES, " ");
	if (s.startsWith("file://")) s = fileURLToPath(s);
	if (s === "~") s = home;
	else if (s.startsWith("~/")) s = home + s.slice(1);
	if (nodePath.posix.isAbsolute(s)) return s;
	return nodePath.posix.resolve(cwd, s);
}

/** A read of an absolute path: the lexical path and its real path. */
export function judgeRead(policy: Policy, abs: string): Decision {
	return decideRead(policy, abs, realpath(abs));
}

/** A write or edit of an absolute path: judged on the path with every link resolved. */
export function judgeWrite(policy: Policy, abs: string): Decision {
	return decideWrite(policy, abs, realpath(abs), isLink(abs));
}

/** A grep/find/ls root: the lexical root and its real path; a missing root counts as a directory. */
export function judgeSearchRoot(policy: Policy, abs: string): Decision {
	let isDirectory = true;
	try {
		isDirectory = fs.statSync(abs).isDirectory();
	} catch {
		isDirectory = true;
	}
	return decideSearchRoot(policy, abs, realpath(abs), isDirectory);
}
