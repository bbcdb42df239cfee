/* SPDX-License-Identifier: MIT */
/*
 * The script of ember's flame graphs (SVG and HTML alike): hover details,
 * click to zoom, search. lib/flamegraph.c embeds it verbatim; it reads all it
 * needs from data-* attributes, so no profile data is ever spliced into code.
 * It must never contain the CDATA end or a closing script tag.
 */
(function () {
	"use strict";
	var svg = document.getElementById("flame");
	var num = function (el, attr) { return Number(el.getAttribute(attr)) || 0; };
	var FW = num(svg, "data-fw"), XPAD = num(svg, "data-xpad");
	var FONT = num(svg, "data-font"), FONTW = num(svg, "data-fontw");
	var DIFF = svg.getAttribute("data-diff") === "1";
	var TOTAL = num(svg, "data-total"), BTOTAL = num(svg, "data-btotal");
	var TW = num(svg, "data-tw"), UNIT = svg.getAttribute("data-unit") || "samples";
	var details = document.getElementById("details");
	var matched = document.getElementById("matched");
	var resetBtn = document.getElementById("reset");
	var searchBtn = document.getElementById("search");
	var box = document.getElementById("search-box"); /* the HTML page's; none in an SVG */
	var HIT = "rgb(230,0,230)";
	var frames = [], byG = new Map(), zoomed = null, term = "";

	var nodes = svg.querySelectorAll("g.f");
	for (var i = 0; i < nodes.length; i++) {
		var g = nodes[i], rect = g.querySelector("rect");
		var f = {
			i: i, g: g, rect: rect, text: g.querySelector("text"),
			name: g.getAttribute("data-name") || "", d: num(g, "data-d"),
			x: num(g, "data-x"), w: num(g, "data-w"), v: num(g, "data-v"),
			b: num(g, "data-b"), fill: rect.getAttribute("fill"), end: nodes.length
		};
		frames.push(f);
		byG.set(g, f);
	}
	/* Pre-order: a frame's callees are the frames after it, up to the next one as shallow. */
	var path = [];
	frames.forEach(function (f) {
		while (path.length && path[path.length - 1].d >= f.d)
			path.pop().end = f.i;
		path.push(f);
	});

	/* The label that fits: as put_label() in flamegraph.c. */
	function fit(f, width) {
		var chars = Math.floor((width - 6) / (FONT * FONTW));
		var cps = Array.from(f.name);

		if (chars < 3)
			f.text.textContent = "";
		else if (cps.length <= chars)
			f.text.textContent = f.name;
		else
			f.text.textContent = cps.slice(0, chars - 2).join("") + "..";
	}

	function place(f, x, w) {
		f.g.removeAttribute("display");
		f.rect.setAttribute("x", x.toFixed(2));
		f.rect.setAttribute("width", w.toFixed(2));
		f.text.setAttribute("x", (x + 3).toFixed(2));
		fit(f, w);
	}

	/* Zooms on z (null: the whole graph): z spans the width, its callers stay, full width. */
	function zoom(z) {
		var x0 = z ? z.x : 0, w0 = z ? z.w : TW, scale = w0 > 0 ? FW / w0 : 0;

		zoomed = z;
		frames.forEach(function (f) {
			var caller = z !== null && f.i < z.i && f.end > z.i;
			var inside = z === null || (f.i >= z.i && f.i < z.end);

			f.g.classList.toggle("anc", caller);
			if (caller)
				place(f, XPAD, FW);
			else if (inside)
				place(f, XPAD + (f.x - x0) * scale, f.w * scale);
			else
				f.g.setAttribute("display", "none");
		});
		resetBtn.setAttribute("visibility", z ? "visible" : "hidden");
	}

	function pct(a, b) {
		return b > 0 ? (100 * a / b).toFixed(2) + "%" : "n/a";
	}

	function short(name) {
		var cps = Array.from(name);
		return cps.length > 100 ? cps.slice(0, 98).join("") + ".." : name;
	}

	function describe(f) {
		var s = short(f.name) + ": ";
		if (DIFF) {
			var pp = (TOTAL > 0 ? 100 * f.v / TOTAL : 0) - (BTOTAL > 0 ? 100 * f.b / BTOTAL : 0);
			return s + "base " + f.b + " " + UNIT + " (" + pct(f.b, BTOTAL) + "), new " +
				f.v + " " + UNIT + " (" + pct(f.v, TOTAL) + "), " +
				(pp >= 0 ? "+" : "") + pp.toFixed(2) + " pp";
		}
		s += f.v + " " + UNIT + ", " + pct(f.v, TOTAL) + " of all";
		if (zoomed)
			s += ", " + pct(f.v, zoomed.v) + " of the zoomed frame";
		return s;
	}

	/* Highlights the frames whose name matches t; the share counts nested matches once. */
	function search(t) {
		var re = null, sum = 0, end = -1;

		term = t || "";
		if (term) {
			try {
				re = new RegExp(term);
			} catch (err) {
				re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
			}
		}
		frames.forEach(function (f) {
			var on = re !== null && re.test(f.name);

			f.rect.setAttribute("fill", on ? HIT : f.fill);
			f.g.classList.toggle("hit", on);
			if (on && f.i >= end) {
				sum += f.w;
				end = f.end;
			}
		});
		matched.textContent = re === null ? " " : "Matched: " + pct(sum, TW) +
			(DIFF ? "" : " (" + sum + " " + UNIT + ")");
		searchBtn.textContent = re === null || box ? "Search" : "Clear Search";
	}

	function askSearch() {
		if (box) {
			box.focus();
			box.select();
		} else if (term) {
			search("");
		} else {
			var t = window.prompt("Search frames: a regular expression, or text", "");
			if (t !== null)
				search(t);
		}
	}

	function frameOf(e) {
		var g = e.target && e.target.closest ? e.target.closest("g.f") : null;
		return g ? byG.get(g) : null;
	}

	svg.addEventListener("mouseover", function (e) {
		var f = frameOf(e);
		if (f)
			details.textContent = describe(f);
	});
	svg.addEventListener("mouseout", function (e) {
		if (frameOf(e))
			details.textContent = " ";
	});
	svg.addEventListener("click", function (e) {
		var f = frameOf(e);
		if (f) {
			/* The zoomed frame again, or a root spanning the graph: back to the whole. */
			zoom(f === zoomed || (f.d === 0 && f.w >= TW) ? null : f);
			details.textContent = describe(f);
		} else if (e.target === resetBtn) {
			zoom(null);
		} else if (e.target === searchBtn) {
			askSearch();
		}
	});
	if (box)
		box.addEventListener("input", function () { search(box.value); });
	document.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && e.key === "f") {
			e.preventDefault();
			askSearch();
		} else if (e.key === "Escape") {
			if (box)
				box.value = "";
			search("");
			zoom(null);
		}
	});
	/*
	 * The root is at the bottom: a graph taller than the window opens on it, not on
	 * its tips. A reload (the file written again) would otherwise get the scroll
	 * position the browser kept, put back after this script ran: the top of the
	 * page, the root out of view.
	 */
	function showRoot() {
		if (document.documentElement.scrollHeight > window.innerHeight)
			window.scrollTo(0, document.documentElement.scrollHeight);
	}
	if (window.history && "scrollRestoration" in window.history)
		window.history.scrollRestoration = "manual";
	showRoot();
	window.addEventListener("load", showRoot);
})();
