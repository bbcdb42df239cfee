// SPDX-License-Identifier: MIT
// Memory growth in a JS heap: leakyCache keeps appending to an array that is never
// cleared, while churn makes short-lived garbage. Spins (on CPU, not growing) until
// SIGUSR2, then grows to about MB megabytes (argv[2], 256 by default) and exits.
'use strict';

const target = (Number(process.argv[2]) || 256) * 1024 * 1024;
const cache = [];
let go = false;

function leakyCache(n) {
	for (let i = 0; i < n; i++)
		cache.push({ id: i, name: 'entry-' + i, values: [i, i * 2, i * 3, i * 4] });
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
		leakyCache(10000);
		churn(10000);
	}
	console.log('grew to ' + (process.memoryUsage().rss >> 20) + ' MiB');
}

process.on('SIGUSR2', () => { go = true; });
waitForGo();
