// SPDX-License-Identifier: MIT
// Node.js under GC pressure, for tests/integration/unwind_node.sh and bench/unwind.sh:
// short-lived objects (scavenges) and a retained ring (mark-compacts), for argv[2] s of CPU.
const ring = new Array(2048);
function makeGarbage(n, round) {
	let live = 0;
	for (let i = 0; i < n; i++) {
		const o = { id: i, pair: [i, i + 1], name: 'item' + i };
		if ((i & 255) === 0)
			ring[(round * 97 + i) & 2047] = o;
		live += o.pair.length;
	}
	return live;
}
// CPU time (all threads), not wall time: a busy machine gets as many samples, only later
function cpuMs() {
	const u = process.cpuUsage();
	return (u.user + u.system) / 1000;
}
function churn(ms) {
	const end = cpuMs() + ms;
	let x = 0;
	for (let round = 0; cpuMs() < end; round++)
		x += makeGarbage(20000, round);
	return x;
}
console.log(churn(Number(process.argv[2]) * 1000));
