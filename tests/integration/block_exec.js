'use strict';
// The off-CPU Node.js workload of tests/integration/offcpu_node.sh and offcpu_runtimes.sh.
// Spins (on CPU, so that the profiler loads node's unwind tables) until SIGUSR1,
// then handles 40 "requests" that each block 50 ms in a synchronous child process.
const { execSync } = require('child_process');
let go = false;
process.on('SIGUSR1', () => { go = true; });
function handleRequest(i) {
	execSync('sleep 0.05');
	return i;
}
function spin() {
	const end = Date.now() + 10;
	while (Date.now() < end);
	if (!go)
		return setImmediate(spin);
	for (let i = 0; i < 40; i++)
		handleRequest(i);
}
spin();
