'use strict';
// Issue 44's Node.js workload, as users start it (no flags): hotJsLoop -> innerJs for
// argv[2] ms of the process's CPU, then those CPU seconds printed
// (tests/integration/runtime_exited.sh, bench/peer.sh).
function innerJs(i) {
	let s = 0;
	for (let k = 0; k < 200; k++)
		s += (i * k) % 7;
	return s;
}
// runs for ms of the process's CPU time: as many samples on a loaded host
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function hotJsLoop(ms) {
	const end = cpuMs() + ms;
	let x = 0;
	while (cpuMs() < end)
		for (let i = 0; i < 20000; i++)
			x += innerJs(i);
	return x;
}
hotJsLoop(Number(process.argv[2]));
console.log(cpuMs() / 1000); // the process's CPU seconds: the samples to expect
