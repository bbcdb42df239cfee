// SPDX-License-Identifier: MIT
/*
 * Drives headless Chromium over the DevTools protocol on a pipe (no npm, no
 * port): opens a flame graph that tests/tools/mkflame wrote, checks its
 * rectangles through the DOM, hovers, clicks to zoom and back, searches, and
 * checks that the page made no request and threw nothing. With --deep, FILE is
 * mkflame --deep's graph, taller than a 1366x768 window: it must open, and
 * reload, with its root row in view.
 * usage: node flamegraph_browser.js CHROMIUM PROFILE_DIR FILE [--diff | --deep]
 */
"use strict";
const { spawn } = require("child_process");
const path = require("path");

const [chromium, profileDir, file, mode] = process.argv.slice(2);
const diff = mode === "--diff", deep = mode === "--deep";
const url = "file://" + path.resolve(file);
const kind = path.extname(file).slice(1) + (diff ? " diff" : deep ? " deep" : "");
/* mkflame's hostile frame name, as it must read back: two bad bytes, two U+FFFD */
const HOSTILE = 'std::vector<int>::push_back</script><img src="http://127.0.0.1:9/x"> & \ufffd\ufffd';

let failures = 0;
function check(ok, what, got) {
	if (ok) {
		console.log(`ok   ${kind}: ${what}`);
	} else {
		failures++;
		console.log(`FAIL ${kind}: ${what}` + (got === undefined ? "" : `: got ${JSON.stringify(got)}`));
	}
}

const chrome = spawn(chromium, [
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--remote-debugging-pipe", "--user-data-dir=" + profileDir, "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
const stderr = [];
chrome.stdio[2].on("data", (d) => stderr.push(d));
const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
const timer = setTimeout(() => {
	console.log(`FAIL ${kind}: timed out; chromium said:\n${Buffer.concat(stderr).toString()}`);
	chrome.on("exit", () => process.exit(1));
	chrome.kill("SIGKILL");
}, 30000);

/* The protocol: JSON messages, each ended by a NUL byte. */
let nextId = 0, inbuf = Buffer.alloc(0);
const pending = new Map(), events = [];
function send(method, params, sessionId) {
	const msg = { id: ++nextId, method, params: params || {} };
	if (sessionId)
		msg.sessionId = sessionId;
	toChrome.write(JSON.stringify(msg) + "\0");
	return new Promise((resolve, reject) => pending.set(msg.id, { resolve, reject, method }));
}
function onMessage(m) {
	if (m.id !== undefined) {
		const p = pending.get(m.id);
		pending.delete(m.id);
		if (m.error)
			p.reject(new Error(`${p.method}: ${m.error.message}`));
		else
			p.resolve(m.result);
		return;
	}
	events.push(m);
}
fromChrome.on("data", (chunk) => {
	inbuf = Buffer.concat([inbuf, chunk]);
	let end;
	while ((end = inbuf.indexOf(0)) >= 0) {
		onMessage(JSON.parse(inbuf.subarray(0, end).toString("utf8")));
		inbuf = inbuf.subarray(end + 1);
	}
});

async function main() {
	const { targetId } = await send("Target.createTarget", { url: "about:blank" });
	const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
	const s = (method, params) => send(method, params, sessionId);
	const seen = [];
	let promptText = "";

	await s("Page.enable");
	await s("Network.enable");
	await s("Runtime.enable");
	await s("Emulation.setDeviceMetricsOverride",
		{ width: 1220, height: 500, deviceScaleFactor: 1, mobile: false });
	fromChrome.on("data", () => {
		/* answer the SVG's search prompt as a user would */
		for (const e of events.splice(0)) {
			if (e.method === "Page.javascriptDialogOpening")
				s("Page.handleJavaScriptDialog", { accept: true, promptText });
			else
				seen.push(e);
		}
	});
	const evaluate = async (expression) => {
		const r = await s("Runtime.evaluate", { expression, returnByValue: true });
		if (r.exceptionDetails)
			throw new Error(`evaluate ${expression}: ${r.exceptionDetails.text}`);
		return r.result.value;
	};
	/* loaded: the load event of about:blank may come late, so ask the page itself */
	const nav = await s("Page.navigate", { url });
	if (nav.errorText)
		throw new Error(`cannot open ${url}: ${nav.errorText}`);
	const ready = `document.URL === ${JSON.stringify(url)} && document.readyState === "complete"`;
	while (!(await evaluate(ready)))
		await new Promise((r) => setTimeout(r, 50));
	/* Where the root frame's rectangle is in the window, and the page's scroll. */
	const rootBox = () => evaluate(`(() => {
		const g = Array.from(document.querySelectorAll("g.f")).find(
			(g) => g.getAttribute("data-d") === "0");
		const b = g.querySelector("rect").getBoundingClientRect();
		return { top: b.top, bottom: b.bottom, h: window.innerHeight, y: window.scrollY };
	})()`);
	const inView = (r) => r.top >= 0 && r.bottom <= r.h && r.y > 0;
	if (deep)
		return deepChecks(s, evaluate, ready, rootBox, inView);
	const frames = () => evaluate(`Array.from(document.querySelectorAll("g.f")).map((g) => {
		const r = g.querySelector("rect");
		return { name: g.getAttribute("data-name"), x: r.getAttribute("x"),
			w: r.getAttribute("width"), fill: r.getAttribute("fill"),
			hidden: g.getAttribute("display") === "none", caller: g.classList.contains("anc"),
			label: g.querySelector("text").textContent };
	})`);
	const byName = async () => Object.fromEntries((await frames()).map((f) => [f.name, f]));
	/* The centre of an element on screen: a frame by name, or an element by id. */
	const centre = (selector) => evaluate(`(() => {
		const sel = ${JSON.stringify(selector)};
		const el = sel.frame !== undefined ?
			Array.from(document.querySelectorAll("g.f")).find(
				(g) => g.getAttribute("data-name") === sel.frame).querySelector("rect") :
			document.getElementById(sel.id);
		const b = el.getBoundingClientRect();
		return { x: b.left + b.width / 2, y: b.top + b.height / 2 };
	})()`);
	const mouse = async (selector, click) => {
		const { x, y } = await centre(selector);
		await s("Input.dispatchMouseEvent", { type: "mouseMoved", x, y });
		if (!click)
			return;
		await s("Input.dispatchMouseEvent", { type: "mousePressed", x, y, button: "left", clickCount: 1 });
		await s("Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button: "left", clickCount: 1 });
	};
	const text = (id) => evaluate(`document.getElementById(${JSON.stringify(id)}).textContent`);
	const geometry = (f) => f ? `${f.x}+${f.w}` : "missing";

	/* 1. the rectangles of the known tree (mkflame.c's answer key) */
	let f = await byName();
	const want = diff ? {
		all: "10.00+1180.00", main: "10.00+1180.00", alpha: "10.00+472.00",
		leaf: "10.00+177.00", beta: "482.00+472.00", [HOSTILE]: "954.00+236.00",
	} : {
		all: "10.00+1180.00", main: "10.00+1180.00", alpha: "10.00+590.00",
		leaf: "10.00+236.00", beta: "600.00+354.00", [HOSTILE]: "954.00+236.00",
	};
	check((await frames()).length === 6, "6 frame rectangles", (await frames()).length);
	for (const [name, g] of Object.entries(want))
		check(geometry(f[name]) === g, `${name.slice(0, 20)} at x+width ${g}`, geometry(f[name]));
	check(await evaluate(`document.querySelectorAll("img, script[src], iframe").length`) === 0,
	      "the hostile name made no element");
	if (diff) {
		check(f.alpha.fill === "rgb(222,40,40)", "alpha (grew most) is full red", f.alpha.fill);
		check(f.beta.fill === "rgb(50,100,225)", "beta (shrank most) is full blue", f.beta.fill);
		check(f.main.fill === "rgb(222,222,222)", "main (unchanged) is grey", f.main.fill);
	}

	/* 2. hover */
	await mouse({ frame: "alpha" }, false);
	const hover = await text("details");
	check(hover === (diff ? "alpha: base 300 samples (30.00%), new 500 samples (50.00%), +20.00 pp" :
			 "alpha: 500 samples, 50.00% of all"), "hover details", hover);

	/* 3. click to zoom: alpha spans the width, its callee scales, others hide */
	await mouse({ frame: "alpha" }, true);
	f = await byName();
	check(geometry(f.alpha) === "10.00+1180.00", "zoomed alpha spans the graph", geometry(f.alpha));
	check(geometry(f.leaf) === (diff ? "10.00+442.50" : "10.00+472.00"), "its callee scaled",
	      geometry(f.leaf));
	check(f.beta.hidden && f[HOSTILE].hidden, "alpha's siblings hidden");
	check(f.main.caller && f.all.caller && geometry(f.main) === "10.00+1180.00",
	      "its callers shown faded, full width");
	check(await evaluate(`document.getElementById("reset").getAttribute("visibility")`) === "visible",
	      "Reset Zoom shown");
	if (!diff) {
		await mouse({ frame: "leaf" }, false);
		const d = await text("details");
		check(d === "leaf: 200 samples, 20.00% of all, 40.00% of the zoomed frame",
		      "hover while zoomed", d);
	}

	/* 4. Reset Zoom */
	await mouse({ id: "reset" }, true);
	f = await byName();
	check(geometry(f.alpha) === want.alpha && geometry(f.beta) === want.beta && !f.beta.hidden,
	      "reset restores the layout", [geometry(f.alpha), geometry(f.beta)]);

	/* 5. search: the SVG asks with a prompt, the HTML page has a box */
	promptText = "^lea";
	if (file.endsWith(".svg")) {
		await mouse({ id: "search" }, true);
		await new Promise((r) => setTimeout(r, 300));
	} else {
		await evaluate(`document.getElementById("search-box").focus()`);
		await s("Input.insertText", { text: promptText });
	}
	f = await byName();
	const m = await text("matched");
	check(f.leaf.fill === "rgb(230,0,230)" && f.alpha.fill !== "rgb(230,0,230)",
	      "search highlights the match only", [f.leaf.fill, f.alpha.fill]);
	check(m === (diff ? "Matched: 15.00%" : "Matched: 20.00% (200 samples)"), "matched share", m);

	/* 6. offline and clean */
	const requests = seen.filter((e) => e.method === "Network.requestWillBeSent")
		.map((e) => e.params.request.url).filter((u) => u !== url);
	check(requests.length === 0, "no network request", requests);
	const errors = seen.filter((e) => e.method === "Runtime.exceptionThrown" ||
		(e.method === "Runtime.consoleAPICalled" && e.params.type === "error"));
	check(errors.length === 0, "no script error", errors.map((e) => JSON.stringify(e.params).slice(0, 300)));

	/* 7. a graph taller than the window opens on its root (at the bottom), not its tips */
	await reopen(s, evaluate, ready, 1220, 90);
	const root = await rootBox();
	check(inView(root), "opens scrolled to the root frame", root);
}

/* Opens the file afresh in a window of width x height. */
async function reopen(s, evaluate, ready, width, height) {
	await s("Emulation.setDeviceMetricsOverride",
		{ width, height, deviceScaleFactor: 1, mobile: false });
	await s("Page.navigate", { url: "about:blank" });
	await s("Page.navigate", { url });
	await new Promise((r) => setTimeout(r, 200));
	while (!(await evaluate(ready)))
		await new Promise((r) => setTimeout(r, 50));
}

/*
 * A graph taller than a common laptop window (1366x768) opens with its root row
 * in view, and so does a reload from the top of the page (the file written
 * again): the browser must not put its kept scroll position back over it.
 */
async function deepChecks(s, evaluate, ready, rootBox, inView) {
	await reopen(s, evaluate, ready, 1366, 768);
	const tall = await evaluate(`document.documentElement.scrollHeight > 1.5 * window.innerHeight`);
	check(tall, "the graph is taller than 1.5 windows of 768 px");
	const root = await rootBox();
	check(inView(root), "opens at 1366x768 with the root row in view", root);
	await evaluate(`window.scrollTo(0, 0)`);
	await new Promise((r) => setTimeout(r, 200));
	await s("Page.reload", {});
	await new Promise((r) => setTimeout(r, 200));
	while (!(await evaluate(`document.readyState === "complete"`)))
		await new Promise((r) => setTimeout(r, 50));
	const again = await rootBox();
	check(inView(again), "a reload from the top shows the root row again", again);
}

main().catch((err) => {
	failures++;
	console.log(`FAIL ${kind}: ${err.message}`);
}).finally(() => {
	/* exit once chromium has: it must not write into its profile while it is removed */
	clearTimeout(timer);
	chrome.on("exit", () => process.exit(failures ? 1 : 0));
	chrome.kill("SIGKILL");
});
