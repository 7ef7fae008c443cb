/**
 * Concorde pi permission extension: the pure path decisions (notes/harness.md §2.4-§2.6).
 *
 * The rules are not written here: the read, write and search-root tables are rows of data
 * (concorde_workers.domain.boundary.rules), which the policy embeds (`policy.rows`) with the facts
 * they judge by and the reasons their denials are filled from (`policy.reasons`). This file is the
 * TypeScript port of their interpreter, concorde_workers.domain.boundary.interpreter: the same
 * predicates and value sources, the same first-match loop, so a row that uses them needs no change
 * here. tests/integration/test_pi_extension_parity.py runs this file under jiti on the same paths
 * as the Python domain and requires identical decisions, rows and reasons, and
 * tests/integration/test_rules_as_data.py holds its vocabulary to the Python one's.
 *
 * Node built-ins only (no pi, no sandbox-runtime), so the host's tests can load it alone. The
 * generated run copies this file, unchanged, to `<runtime>/control/pi_policy.ts`.
 */

import * as fs from "node:fs";
import * as nodePath from "node:path";
import { fileURLToPath } from "node:url";

const RUNTIME_PREFIX = "concorde-";
/** interpreter.RUNTIME_NAME, matched whole */
const RUNTIME_NAME = /^concorde-[0-9a-f]{6}-[A-Za-z0-9_]{1,32}$/;
/** interpreter.PLACEHOLDER */
const PLACEHOLDER = /\{([a-z_]+)\}/g;
/** interpreter.GUIDANCE_LIMIT */
const GUIDANCE_LIMIT = 12;
const PROCESSES = "/proc";
/** interpreter._SEGMENT_SPLIT: `/`, Python's whitespace (`\\s` of `re`), `,`, `{` and `}` */
const SEGMENT_SPLIT = /[/\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000,{}]/;

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
	rows: Record<string, Row[]>;
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

/** A row of a table, as interpreter.py reads it. */
export interface Row {
	row: string;
	when: string[];
	then: "allow" | "deny" | "table";
	reason?: Fill;
	table?: string;
}
interface Fill {
	key: string;
	values: Record<string, string | Fill | { text: string }>;
}

type Level = "rw" | "ro" | "names";

const READABLE: ReadonlySet<Level | null> = new Set<Level | null>(["ro", "rw"]);

function fillFrom(reasons: Record<string, string>, key: string, values: Record<string, string>): string {
	const template = reasons[key];
	if (typeof template !== "string") throw new Error(`the policy holds no reason ${key}`);
	return template.replace(PLACEHOLDER, (_, name: string) => {
		const value = values[name];
		if (typeof value !== "string") throw new Error(`the reason ${key} needs ${name}`);
		return value;
	});
}

/** Reason `key` of the embedded table filled as domain.boundary.rules.fill fills it: each placeholder
 * replaced once by its value, a value never scanned again; a missing key or value throws. */
export function reason(policy: Policy, key: string, values: Record<string, string> = {}): string {
	return fillFrom(policy.reasons, key, values);
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

// --- the interpreter of the rows (interpreter.py: its facts, vocabulary and first-match loop) --

/** interpreter._under: `path` relative to `root` (both normalised; "" for the root), or null. */
function under(path: string, root: string): string | null {
	if (path === root) return "";
	const prefix = rstripSlash(root) + "/";
	return path.startsWith(prefix) ? path.slice(prefix.length) : null;
}

/** interpreter._Roots: paths as the policy lists them, normalised. */
class Roots {
	readonly given: string[];
	readonly normal: string[];
	readonly prefixes: string[];
	readonly exact: Set<string>;

	constructor(paths: string[]) {
		this.given = [...paths];
		this.normal = this.given.map(normpath);
		this.prefixes = this.normal.map((n) => rstripSlash(n) + "/");
		this.exact = new Set(this.normal);
	}

	hold(path: string): boolean {
		return this.exact.has(path) || this.prefixes.some((p) => path.startsWith(p));
	}

	firstBelow(path: string): string | null {
		const prefix = rstripSlash(path) + "/";
		const i = this.normal.findIndex((n) => n !== path && n.startsWith(prefix));
		return i < 0 ? null : this.given[i];
	}

	anyAtOrBelow(path: string): boolean {
		const prefix = rstripSlash(path) + "/";
		return this.normal.some((n) => n === path || n.startsWith(prefix));
	}
}

/** Python's ordering of strings: by code point. */
function byCodePoint(a: string, b: string): number {
	const x = Array.from(a);
	const y = Array.from(b);
	for (let i = 0; i < Math.min(x.length, y.length); i++) {
		const d = (x[i].codePointAt(0) ?? 0) - (y[i].codePointAt(0) ?? 0);
		if (d !== 0) return d;
	}
	return x.length - y.length;
}

/** interpreter._Facts: the policy's lists as the rows ask them. */
class Facts {
	readonly reasons: Record<string, string>;
	readonly worktree: string;
	readonly git: Roots;
	readonly runtime: Roots;
	readonly host: Roots;
	readonly own: Roots;
	readonly boundaries: Roots;
	readonly runDirectories: Roots;
	readonly credentials: Roots;
	readonly hiddenAnchors: Roots;
	readonly protectedPaths: Roots;
	readonly runtimeRoot: string;
	readonly runtimeDirectory: string;
	readonly temporaryRoots: string[];
	readonly entries: [string, Level][];
	private files = new Map<string, Level>();
	private directories = new Map<string, Level>();
	private belowIndex: Map<string, [string, Level][]> | null = null;
	private guidanceText: string | null = null;

	constructor(p: Policy) {
		this.reasons = p.reasons;
		this.worktree = normpath(p.worktree);
		this.git = new Roots(p.git);
		this.runtime = new Roots(p.runtime);
		this.host = new Roots(p.hidden);
		this.own = new Roots(p.own);
		this.boundaries = new Roots(p.boundaries);
		this.runDirectories = new Roots(p.runDirectories);
		this.credentials = new Roots(p.credentials);
		this.hiddenAnchors = new Roots([...p.runDirectories, ...p.credentials]);
		this.protectedPaths = new Roots([...p.git, ...p.hidden, p.worktree, ...p.boundaries, ...p.runDirectories, ...p.credentials]);
		this.runtimeRoot = normpath(p.runtimeRoot);
		this.runtimeDirectory = normpath(p.runtimeDirectory);
		this.temporaryRoots = p.temporaryRoots.map(normpath);
		this.entries = (["names", "ro", "rw"] as Level[]).flatMap((level) => (p[level] as string[]).map((path): [string, Level] => [path, level]));
		for (const [path, level] of this.entries) {
			const table = path.endsWith("/") ? this.directories : this.files;
			const bare = rstripSlash(path);
			if (!table.has(bare)) table.set(bare, level);
		}
	}

	rel(path: string): string | null {
		return under(path, this.worktree);
	}

	shown(pathIn: string): string {
		const path = normpath(pathIn);
		const rel = this.rel(path) ?? relativeTo(path, this.worktree);
		return rel || this.worktree;
	}

	fill(key: string, values: Record<string, string>): string {
		return fillFrom(this.reasons, key, values);
	}

	levelOf(relIn: string): Level | null {
		const rel = stripSlashes(relIn);
		return this.files.get(rel) ?? this.directoryLevel(rel);
	}

	directoryLevel(rel: string): Level | null {
		let folder = rel;
		for (;;) {
			const found = this.directories.get(folder);
			if (found !== undefined) return found;
			if (!folder) return null;
			folder = folder.includes("/") ? folder.slice(0, folder.lastIndexOf("/")) : "";
		}
	}

	below(rel: string): [string, Level][] {
		if (this.belowIndex === null) {
			const index = new Map<string, [string, Level][]>();
			for (const [path, level] of this.entries) {
				let folder = rstripSlash(path);
				while (folder) {
					folder = folder.includes("/") ? folder.slice(0, folder.lastIndexOf("/")) : "";
					if (!index.has(folder)) index.set(folder, []);
					index.get(folder)?.push([path, level]);
				}
			}
			this.belowIndex = index;
		}
		return this.belowIndex.get(rel) ?? [];
	}

	withheldBelow(rel: string): string[] {
		return this.below(rel).filter(([, level]) => level === "names").map(([path]) => path);
	}

	otherRun(path: string): boolean {
		if (under(path, this.runtimeDirectory) !== null) return false;
		const rel = under(path, this.runtimeRoot);
		if (rel !== null && rel.split("/")[0].startsWith(RUNTIME_PREFIX)) return true;
		return this.temporaryRoots.some((root) => {
			const r = under(path, root);
			return r !== null && r.split("/").some((part) => RUNTIME_NAME.test(part));
		});
	}

	searchableDirectories(): string[] {
		const anchors = new Roots([...this.git.given, ...this.hiddenAnchors.given]);
		const out: string[] = [];
		for (const [path, level] of this.entries) {
			if (!path.endsWith("/") || !READABLE.has(level)) continue;
			const bare = rstripSlash(path);
			const absolute = this.worktree.endsWith("/") ? this.worktree + bare : `${this.worktree}/${bare}`;
			if (this.withheldBelow(bare).length > 0 || anchors.firstBelow(absolute) !== null) continue;
			out.push(absolute);
		}
		const kept = out.filter((d) => !out.some((o) => o !== d && under(d, o) !== null));
		return [...new Set(kept)].sort(byCodePoint);
	}

	guidance(): string {
		if (this.guidanceText === null) {
			const dirs = this.searchableDirectories();
			if (dirs.length === 0) {
				this.guidanceText = this.fill("no guidance", {});
			} else {
				let shown = dirs.slice(0, GUIDANCE_LIMIT).join(", ");
				const more = dirs.length - GUIDANCE_LIMIT;
				if (more > 0) shown = this.fill("more directories", { directories: shown, more: String(more) });
				this.guidanceText = this.fill("guidance", { directories: shown });
			}
		}
		return this.guidanceText;
	}
}

/** interpreter._Subject: one path judged (normalised) and what came with it. */
class Subject {
	readonly path: string;
	readonly rel: string | null;
	readonly isDirectory: boolean;
	readonly given: string;
	readonly link: boolean;
	readonly pattern: string | null;
	readonly glob: string | null;
	private levelFound: Level | null | undefined = undefined;
	private rootLevelFound: Level | null | undefined = undefined;

	constructor(facts: Facts, path: string, more: Partial<Pick<Subject, "isDirectory" | "given" | "link" | "pattern" | "glob">> = {}) {
		this.path = normpath(path);
		this.rel = facts.rel(this.path);
		this.isDirectory = more.isDirectory ?? true;
		this.given = more.given ?? "";
		this.link = more.link ?? false;
		this.pattern = more.pattern ?? null;
		this.glob = more.glob ?? null;
	}

	level(f: Facts): Level | null {
		if (this.levelFound === undefined) this.levelFound = this.rel === null ? null : f.levelOf(this.rel);
		return this.levelFound;
	}

	rootLevel(f: Facts): Level | null {
		if (this.rootLevelFound === undefined) {
			this.rootLevelFound = this.rel === null || !this.isDirectory ? this.level(f) : f.directoryLevel(this.rel);
		}
		return this.rootLevelFound;
	}
}

type Predicate = (f: Facts, s: Subject) => boolean;
type Value = (f: Facts, s: Subject) => string;

/** interpreter.has_dotdot */
function hasDotdot(value: string): boolean {
	return value.split(SEGMENT_SPLIT).includes("..");
}

function gitSegment(_f: Facts, s: Subject): boolean {
	return s.rel !== null && s.rel.split("/").includes(".git");
}

/** interpreter._source: a value that may be missing; a row naming it where it is missing is a defect. */
function source(name: string, find: (f: Facts, s: Subject) => string | null | undefined): Value {
	return (f, s) => {
		const found = find(f, s);
		if (found === null || found === undefined) throw new Error(`the value '${name}' is missing for ${s.path}`);
		return found;
	};
}

/** interpreter.PREDICATES */
const PREDICATES: Record<string, Predicate> = {
	"in git": (f, s) => f.git.hold(s.path) || gitSegment(f, s),
	"in git admin path": (f, s) => f.git.hold(s.path),
	"git segment": gitSegment,
	"in run directory": (f, s) => f.runDirectories.hold(s.path),
	"in other run": (f, s) => f.otherRun(s.path),
	"in credentials": (f, s) => f.credentials.hold(s.path),
	"in runtime path": (f, s) => f.runtime.hold(s.path),
	"runtime path at or below": (f, s) => f.runtime.anyAtOrBelow(s.path),
	"in worktree": (_f, s) => s.rel !== null,
	"level rw": (f, s) => s.level(f) === "rw",
	"level ro": (f, s) => s.level(f) === "ro",
	"level names": (f, s) => s.level(f) === "names",
	"level readable": (f, s) => READABLE.has(s.level(f)),
	"root level names": (f, s) => s.rootLevel(f) === "names",
	"root level readable": (f, s) => READABLE.has(s.rootLevel(f)),
	"readable below": (f, s) => s.rel !== null && f.below(s.rel).some(([, level]) => READABLE.has(level)),
	"withheld below": (f, s) => s.rel !== null && f.withheldBelow(s.rel).length > 0,
	"in host path": (f, s) => f.host.hold(s.path),
	"in processes": (_f, s) => under(s.path, PROCESSES) !== null,
	"in own directory": (f, s) => f.own.hold(s.path),
	"in boundary": (f, s) => f.boundaries.hold(s.path),
	directory: (_f, s) => s.isDirectory,
	link: (_f, s) => s.link,
	"temp root at or below": (f, s) => under(f.runtimeRoot, s.path) !== null,
	"git below": (f, s) => f.git.firstBelow(s.path) !== null,
	"hidden below": (f, s) => f.hiddenAnchors.firstBelow(s.path) !== null,
	"protected below": (f, s) => f.protectedPaths.firstBelow(s.path) !== null,
	"pattern absolute": (_f, s) => s.pattern !== null && s.pattern.startsWith("/"),
	"pattern dotdot": (_f, s) => s.pattern !== null && hasDotdot(s.pattern),
	"glob dotdot": (_f, s) => s.glob !== null && hasDotdot(s.glob),
};

const gitBelow = source("git below", (f, s) => f.git.firstBelow(s.path));

/** interpreter.VALUES */
const VALUES: Record<string, Value> = {
	path: (_f, s) => s.path,
	shown: (f, s) => f.shown(s.path),
	given: (_f, s) => s.given,
	named: (f, s) => (s.link ? f.fill("link target", { path: f.shown(s.path), link: s.given }) : f.shown(s.path)),
	guidance: (f) => f.guidance(),
	"git below": gitBelow,
	"git below, shown": (f, s) => f.shown(gitBelow(f, s)),
	"hidden below": source("hidden below", (f, s) => f.hiddenAnchors.firstBelow(s.path)),
	"protected below": source("protected below", (f, s) => f.protectedPaths.firstBelow(s.path)),
	"withheld below": source("withheld below", (f, s) => (s.rel === null ? null : f.withheldBelow(s.rel)[0])),
	pattern: source("pattern", (_f, s) => s.pattern),
	glob: source("glob", (_f, s) => s.glob),
};

/** The vocabulary's names, for the tests that hold it to interpreter.py's. */
export const VOCABULARY = { predicates: Object.keys(PREDICATES), values: Object.keys(VALUES) };

type Outcome = (judge: Judge, s: Subject) => Decision;
type Compiled = { conditions: [Predicate, boolean][]; outcome: Outcome };

function condition(name: string): [Predicate, boolean] {
	const wanted = !name.startsWith("not ");
	const predicate = wanted ? name : name.slice(4);
	if (!Object.hasOwn(PREDICATES, predicate)) throw new Error(`no predicate '${name}'`);
	return [PREDICATES[predicate], wanted];
}

function valueOf(spec: unknown, reasons: Record<string, string>): Value {
	if (typeof spec === "string") {
		if (!Object.hasOwn(VALUES, spec)) throw new Error(`no value '${spec}'`);
		return VALUES[spec];
	}
	if (spec !== null && typeof spec === "object" && Object.keys(spec).join() === "text") {
		const literal = (spec as { text: unknown }).text;
		if (typeof literal === "string") return () => literal;
	}
	return fillOf(spec, reasons);
}

function fillOf(spec: unknown, reasons: Record<string, string>): Value {
	const keys = spec !== null && typeof spec === "object" ? Object.keys(spec).sort().join() : "";
	if (keys !== "key,values") throw new Error(`a fill is a reason's key and its values, not ${JSON.stringify(spec)}`);
	const { key, values } = spec as Fill;
	if (!Object.hasOwn(reasons, key)) throw new Error(`no reason '${key}'`);
	const wanted = [...new Set([...reasons[key].matchAll(PLACEHOLDER)].map((m) => m[1]))].sort();
	if (wanted.join() !== Object.keys(values).sort().join()) {
		throw new Error(`the reason '${key}' takes ${wanted.join(", ")}, not ${Object.keys(values).sort().join(", ")}`);
	}
	const compiled = Object.entries(values).map(([name, v]): [string, Value] => [name, valueOf(v, reasons)]);
	return (f, s) => f.fill(key, Object.fromEntries(compiled.map(([name, v]) => [name, v(f, s)])));
}

const OUTCOME_KEYS: Record<string, string> = { allow: "row,then,when", deny: "reason,row,then,when", table: "row,table,then,when" };

function outcomeOf(row: Row, deciding: Set<string>, reasons: Record<string, string>): Outcome {
	const { row: name, then } = row;
	if (typeof name !== "string" || !Object.hasOwn(OUTCOME_KEYS, then) || Object.keys(row).sort().join() !== OUTCOME_KEYS[then]) {
		throw new Error(`a row is its name, its conditions and one outcome, not ${JSON.stringify(row)}`);
	}
	if (then === "allow") return () => ({ allowed: true, reason: null, row: name });
	if (then === "table") {
		const other = row.table as string;
		if (!deciding.has(other)) throw new Error(`the row '${name}' hands over to '${other}', which is no table that decides by itself`);
		return (judge, s) => judge.table(other, s);
	}
	const because = fillOf(row.reason, reasons);
	return (judge, s) => ({ allowed: false, reason: because(judge.facts, s), row: name });
}

/** interpreter.compile_table */
function compileTable(rows: Row[], deciding: Set<string>, reasons: Record<string, string>): Compiled[] {
	const compiled = rows.map((row) => ({ conditions: row.when.map(condition), outcome: outcomeOf(row, deciding, reasons) }));
	if (rows.length === 0 || rows[rows.length - 1].when.length > 0) throw new Error("the last row of a table must decide whatever the path");
	return compiled;
}

/** interpreter.Judge: the tables of one policy, its facts and its rows. */
class Judge {
	readonly facts: Facts;
	private readonly tables = new Map<string, Compiled[]>();

	constructor(policy: Policy) {
		this.facts = new Facts(policy);
		const rows = policy.rows;
		const deciding = new Set(Object.keys(rows).filter((n) => rows[n].every((r) => r.then !== "table")));
		for (const [name, table] of Object.entries(rows)) this.tables.set(name, compileTable(table, deciding, this.facts.reasons));
	}

	table(name: string, subject: Subject): Decision {
		const f = this.facts;
		for (const { conditions, outcome } of this.tables.get(name) ?? []) {
			if (conditions.every(([predicate, wanted]) => predicate(f, subject) === wanted)) return outcome(this, subject);
		}
		throw new Error(`the table ${name} decided nothing`);
	}

	read(path: string, real: string | null): Decision {
		const lexical = this.table("read", new Subject(this.facts, path));
		return !lexical.allowed || real === null ? lexical : this.table("read", new Subject(this.facts, real));
	}

	write(given: string, resolved: string, givenIsLink: boolean): Decision {
		return this.table("write", new Subject(this.facts, resolved, { given, link: givenIsLink }));
	}

	searchRoot(root: string, real: string | null, isDirectory: boolean): Decision {
		const lexical = this.table("search root", new Subject(this.facts, root, { isDirectory }));
		return !lexical.allowed || real === null ? lexical : this.table("search root", new Subject(this.facts, real, { isDirectory }));
	}

	search(lexical: string, real: string | null, isDirectory: boolean, pattern: string | null, glob: string | null): Decision {
		const judged = (path: string) => this.table("search guard", new Subject(this.facts, path, { isDirectory, pattern, glob }));
		const decided = judged(lexical);
		if (!decided.allowed || real === null || normpath(real) === normpath(lexical)) return decided;
		return judged(real);
	}
}

const JUDGES = new WeakMap<Policy, Judge>();

/** The judge of a policy, made once per policy object. */
function judgeOf(policy: Policy): Judge {
	let judge = JUDGES.get(policy);
	if (judge === undefined) {
		judge = new Judge(policy);
		JUDGES.set(policy, judge);
	}
	return judge;
}

/** decide_read: the lexical path and, when given, its real path must both pass. */
export function decideRead(policy: Policy, path: string, real: string | null = null): Decision {
	return judgeOf(policy).read(path, real);
}

/** decide_write: judged on the fully resolved target (final link included). */
export function decideWrite(policy: Policy, given: string, resolved: string, givenIsLink = false): Decision {
	return judgeOf(policy).write(given, resolved, givenIsLink);
}

/** decide_search_root: a directory in the worktree by §2.6, anything else by the read table. */
export function decideSearchRoot(policy: Policy, root: string, real: string | null = null, isDirectory = true): Decision {
	return judgeOf(policy).searchRoot(root, real, isDirectory);
}

/** search_guard.decide_search: Claude Code's Grep/Glob rows, for the tests of the vocabulary (pi
 * judges its grep, find and ls roots by `decideSearchRoot`). */
export function decideSearch(
	policy: Policy,
	lexical: string,
	real: string | null = null,
	isDirectory = true,
	pattern: string | null = null,
	glob: string | null = null,
): Decision {
	return judgeOf(policy).search(lexical, real, isDirectory, pattern, glob);
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
