// SPDX-License-Identifier: MIT
// proginfo: prints "NAME VERIFIED_INSNS XLATED_BYTES JITED_BYTES" of each BPF program id
// given (bpf_prog_info; bpftool 7.1 does not show verified_insns). bench/startup.sh and
// bench/peer.sh compile it.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id((__u32)strtoul(argv[i], NULL, 10));

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			printf("%s %u %u %u\n", info.name, info.verified_insns,
			       info.xlated_prog_len, info.jited_prog_len);
		close(fd);
	}
	return 0;
}
