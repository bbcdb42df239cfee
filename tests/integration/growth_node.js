// SPDX-License-Identifier: MIT
// Memory growth in a JS heap: leakyCache keeps appending to an array that is never
// cleared, while churn makes short-lived garbage. What it appends are arrays of 32768
// elements, each larger than V8's largest regular object: allocated in the large-object
// space by leakyCache itself, never copied by a scavenge (whose copies run on V8's
// helper threads, where no JS stack says what grew). Spins (on CPU, not growing) until
// SIGUSR2, then grows to about MB megabytes (argv[2], 256 by default), says so, and
// stays (idle) until killed: its perf map is read while it lives.
'use strict';

const target = (Number(process.argv[2]) || 256) * 1024 * 1024;
const cache = [];
let go = false;

function leakyCache(n) {
	for (let i = 0; i < n; i++)
		cache.push(new Array(32768).fill(i));
}

function churn(n) {
	let sum = 0;
	for (let i = 0; i < n; i++)
		sum += { a: i, b: [i] }.b[0];
	return sum;
}

function waitForGo() {
	const end = Date.now() + 20;
	while (Date.now() < end)
		;
	if (go)
		grow();
	else
		setImmediate(waitForGo);
}

function grow() {
	while (process.memoryUsage().rss < target) {
		leakyCache(16);
		churn(10000);
	}
	console.log('grew to ' + (process.memoryUsage().rss >> 20) + ' MiB');
	setInterval(() => {}, 1000);
}

process.on('SIGUSR2', () => { go = true; });
waitForGo();
