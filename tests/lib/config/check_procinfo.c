// SPDX-License-Identifier: MIT
/*
 * procinfo: known answers for real-world cgroup layouts (systemd, docker,
 * containerd, cri-o, podman), cgroup and environ text, and live processes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroupid.h"
#include "procinfo.h"
#include "suites.h"

#define ID "3f4e5d6c7b8a99001122334455667788aabbccddeeff00112233445566778899"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
/* One short, one in uppercase: neither is an id. */
#define ID_63 "3f4e5d6c7b8a99001122334455667788aabbccddeeff0011223344556677889"
#define ID_UPPER "3F4E5D6C7B8A99001122334455667788AABBCCDDEEFF00112233445566778899"
#define POD_UID "1a2b3c4d-0000-1111-2222-333344445555"
#define POD_SLICE "kubepods-burstable-pod1a2b3c4d_0000_1111_2222_333344445555.slice"

/* --- unit from cgroup path ---------------------------------------------------------- */

static const struct {
	const char *path, *unit; /* unit NULL: none */
} unit_cases[] = {
	{"/system.slice/nginx.service", "nginx.service"},
	{"/system.slice/docker-" ID ".scope", "docker-" ID ".scope"},
	{"/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", "foo.service"},
	{"/user.slice/user-1000.slice/session-3.scope", "session-3.scope"},
	{"/system.slice/nginx.service/worker", "nginx.service"},
	{"/system.slice/nginx.service/a/b/c", "nginx.service"},
	{"/init.scope", "init.scope"},
	{"/", NULL},
	{"", NULL},
	{"/system.slice", NULL},
	{"/user.slice/user-1000.slice", NULL},
	{"/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service"},
	{"/system.slice/system-openvpn\\x2dclient.slice/openvpn-client@home.service",
	 "openvpn-client@home.service"},
	{"/system.slice/containerd.service", "containerd.service"},
	{"/system.slice/dbus.socket", "dbus.socket"},
	{"/system.slice/boot.mount", "boot.mount"},
	{"/system.slice/dev-sda2.swap", "dev-sda2.swap"},
	{"/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000.service"},
	{"/user.slice/user-1000.slice/user@1000.service", "user@1000.service"},
	{"/user.slice/user-1000.slice/user@1000.service/app.slice", "user@1000.service"},
	{"/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope",
	 "app-gnome-firefox-4242.scope"},
	{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope/container",
	 "libpod-" ID ".scope"},
	{"/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/cri-containerd-" ID ".scope",
	 "cri-containerd-" ID ".scope"},
	{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice/crio-" ID
	 ".scope",
	 "crio-" ID ".scope"},
	{"/machine.slice/libpod-" ID ".scope/container", "libpod-" ID ".scope"},
	{"/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/emulator",
	 "machine-qemu\\x2d1\\x2dvm.scope"},
	{"/docker/" ID, NULL},
	{"/kubepods/burstable/pod" POD_UID "/" ID, NULL},
	{"/lxc.payload.c1/system.slice/sshd.service", NULL},
	{"/../../system.slice/nginx.service", "nginx.service"},
	{"/system.slice/.service", NULL},
	{"/system.slice/bad name.service", NULL},
	{"/system.slice/foo.service.d", NULL},
	{"//system.slice//nginx.service/", "nginx.service"},
	{"/system.slice/nginx.target", NULL},
};

START_TEST(test_unit_layouts)
{
	const char *path = unit_cases[_i].path, *want = unit_cases[_i].unit;
	char out[256];
	bool got = procinfo_unit_from_cgroup(path, out, sizeof(out));

	ck_assert_msg(got == (want != NULL), "%s: got %d", path, got);
	ck_assert_msg(!strcmp(out, want ? want : ""), "%s: unit '%s', want '%s'", path, out,
		      want ? want : "");
}
END_TEST

START_TEST(test_unit_bounds)
{
	char small[8], big[300];
	char path[400];

	ck_assert(!procinfo_unit_from_cgroup("/system.slice/nginx.service", small, sizeof(small)));
	ck_assert_str_eq(small, "");
	ck_assert(procinfo_unit_from_cgroup("/system.slice/a.scope", small, sizeof(small)));
	ck_assert_str_eq(small, "a.scope");
	/* systemd names are below 256 bytes: a longer component is not a unit. */
	strcpy(path, "/system.slice/");
	memset(path + strlen(path), 'a', 250);
	strcpy(path + strlen("/system.slice/") + 250, ".service");
	ck_assert(!procinfo_unit_from_cgroup(path, big, sizeof(big)));
	path[strlen("/system.slice/") + 240] = '\0';
	strcat(path, ".service");
	ck_assert(procinfo_unit_from_cgroup(path, big, sizeof(big)));
	ck_assert_uint_eq(strlen(big), 248);
}
END_TEST

/* --- container id from cgroup path -------------------------------------------------- */

static const struct {
	const char *path, *id, *runtime; /* id NULL: none */
} container_cases[] = {
	/* docker, cgroupfs driver */
	{"/docker/" ID, ID, "docker"},
	/* docker, systemd driver */
	{"/system.slice/docker-" ID ".scope", ID, "docker"},
	/* docker, a sub-cgroup the container created (systemd inside) */
	{"/system.slice/docker-" ID ".scope/init.scope", ID, "docker"},
	/* kubernetes, cgroupfs driver (containerd) */
	{"/kubepods/burstable/pod" POD_UID "/" ID, ID, "containerd"},
	{"/kubepods/pod" POD_UID "/" ID, ID, "containerd"},
	{"/kubepods/besteffort/pod" POD_UID "/" ID, ID, "containerd"},
	/* kubernetes, systemd driver, containerd */
	{"/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/cri-containerd-" ID ".scope", ID,
	 "containerd"},
	{"/kubepods.slice/kubepods-pod1a2b.slice/cri-containerd-" ID ".scope", ID, "containerd"},
	/* kubernetes, systemd driver, docker (dockershim) */
	{"/kubepods.slice/kubepods-besteffort.slice/" POD_SLICE "/docker-" ID ".scope", ID,
	 "docker"},
	/* cri-o, systemd and cgroupfs drivers; conmon is not the container */
	{"/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/crio-" ID ".scope", ID, "cri-o"},
	{"/kubepods/burstable/pod" POD_UID "/crio-" ID, ID, "cri-o"},
	{"/kubepods.slice/kubepods-burstable.slice/" POD_SLICE "/crio-conmon-" ID ".scope", NULL,
	 NULL},
	/* podman, rootful and rootless, with and without the "container" leaf */
	{"/machine.slice/libpod-" ID ".scope", ID, "podman"},
	{"/machine.slice/libpod-" ID ".scope/container", ID, "podman"},
	{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope/container",
	 ID, "podman"},
	{"/libpod_parent/libpod-" ID, ID, "podman"},
	{"/machine.slice/libpod-conmon-" ID ".scope", NULL, NULL},
	/* nesting: the innermost container (kind nodes, docker in docker) */
	{"/docker/" ID2 "/kubepods/burstable/pod" POD_UID "/" ID, ID, "containerd"},
	{"/system.slice/docker-" ID2 ".scope/kubepods/besteffort/pod" POD_UID "/" ID, ID,
	 "containerd"},
	{"/docker/" ID2 "/docker/" ID, ID, "docker"},
	/* a bare id under an unknown parent (containerd namespaces, ECS) */
	{"/default/" ID, ID, ""},
	{"/ecs/0123456789abcdef0123456789abcdef/" ID, ID, ""},
	/* not containers */
	{"/", NULL, NULL},
	{"", NULL, NULL},
	{"/system.slice/nginx.service", NULL, NULL},
	{"/user.slice/user-1000.slice/session-3.scope", NULL, NULL},
	{"/lxc.payload.c1", NULL, NULL},
	{"/lxc/c1", NULL, NULL},
	{"/kubepods/burstable/pod" POD_UID, NULL, NULL},
	/* wrong length, wrong case, not hex, wrong decoration */
	{"/docker/" ID_63, NULL, NULL},
	{"/docker/" ID "0", NULL, NULL},
	{"/docker/" ID_UPPER, NULL, NULL},
	{"/docker/" ID_63 "g", NULL, NULL},
	{"/system.slice/docker-" ID ".service", NULL, NULL},
	{"/system.slice/docker-" ID ".scope.scope", NULL, NULL},
	{"/system.slice/docker-.scope", NULL, NULL},
	{"/system.slice/podman-" ID ".scope", NULL, NULL},
	{"/docker/" ID "/", ID, "docker"},
};

START_TEST(test_container_layouts)
{
	const char *path = container_cases[_i].path, *want = container_cases[_i].id;
	const char *want_rt = container_cases[_i].runtime;
	char id[65], rt[16];
	bool got = procinfo_container_from_cgroup(path, id, sizeof(id), rt, sizeof(rt));

	ck_assert_msg(got == (want != NULL), "%s: got %d", path, got);
	ck_assert_msg(!strcmp(id, want ? want : ""), "%s: id '%s'", path, id);
	ck_assert_msg(!strcmp(rt, want_rt ? want_rt : ""), "%s: runtime '%s', want '%s'", path, rt,
		      want_rt ? want_rt : "");
}
END_TEST

START_TEST(test_container_bounds)
{
	char id[65], small[64], rt[4];

	ck_assert(!procinfo_container_from_cgroup("/docker/" ID, small, sizeof(small), NULL, 0));
	ck_assert_str_eq(small, "");
	ck_assert(procinfo_container_from_cgroup("/docker/" ID, id, sizeof(id), NULL, 0));
	ck_assert_str_eq(id, ID);
	/* A short runtime buffer is truncated, never overrun. */
	ck_assert(procinfo_container_from_cgroup("/machine.slice/libpod-" ID ".scope", id,
						 sizeof(id), rt, sizeof(rt)));
	ck_assert_str_eq(rt, "pod");
}
END_TEST

/* --- /proc/PID/cgroup text ---------------------------------------------------------- */

static int parse_cg(const char *text, char *out, size_t outlen)
{
	return procinfo_parse_cgroup(text, strlen(text), out, outlen);
}

START_TEST(test_cgroup_hybrid)
{
	char out[256];
	/* v1 hierarchies plus an unused v2 root: the systemd hierarchy tells. */
	static const char hybrid[] = "12:pids:/system.slice/nginx.service\n"
				     "11:cpu,cpuacct:/system.slice/nginx.service\n"
				     "9:name=systemd:/system.slice/nginx.service\n"
				     "1:memory:/system.slice/nginx.service\n"
				     "0::/\n";
	static const char legacy_root[] = "9:name=systemd:/\n8:pids:/\n4:memory:/x/y\n0::/\n";
	static const char v1_only[] = "3:cpu:/a\n1:name=systemd:/docker/" ID "\n";
	static const char combined[] = "2:net_cls,name=systemd,net_prio:/system.slice/a.service\n";

	ck_assert_int_eq(parse_cg(hybrid, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/system.slice/nginx.service");
	ck_assert_int_eq(parse_cg(legacy_root, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/");
	ck_assert_int_eq(parse_cg(v1_only, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/docker/" ID);
	ck_assert_int_eq(parse_cg(combined, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/system.slice/a.service");
}
END_TEST

START_TEST(test_cgroup_v2)
{
	char out[256];

	ck_assert_int_eq(parse_cg("0::/system.slice/nginx.service\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/system.slice/nginx.service");
	/* Unified wins over name=systemd in hybrid mode, in either order. */
	ck_assert_int_eq(parse_cg("1:name=systemd:/old\n0::/new.scope\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/new.scope");
	ck_assert_int_eq(parse_cg("0::/new.scope\n1:name=systemd:/old\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/new.scope");
	/* The root (kernel threads, or a container's own namespace) is "/". */
	ck_assert_int_eq(parse_cg("0::/\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/");
	/* No final newline; a removed cgroup; ':' in the path; a namespace-relative path. */
	ck_assert_int_eq(parse_cg("0::/a.slice/b.service", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/a.slice/b.service");
	ck_assert_int_eq(parse_cg("0::/system.slice/gone.service (deleted)\n", out, 256), 0);
	ck_assert_str_eq(out, "/system.slice/gone.service");
	ck_assert_int_eq(parse_cg("0::/a:b:c\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/a:b:c");
	ck_assert_int_eq(parse_cg("0::/../../system.slice/x.service\n", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/../../system.slice/x.service");
}
END_TEST

START_TEST(test_cgroup_garbage)
{
	static const char garbage[] = "\n\nhello\n:::\n0:\n0::\n0::relative\nx::/bad-id\n"
				      "1:cpu:/not-systemd\n-1::/neg\n0:cpu:/v1-with-id-0\n"
				      "1:name=systemdx:/trap\n";
	static const char with_nul[] = "0::/a\0b\n1:name=systemd:/ok\n";
	char out[256], tiny[4];

	ck_assert_int_eq(parse_cg("", out, sizeof(out)), -ENOENT);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(parse_cg(garbage, out, sizeof(out)), -ENOENT);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(parse_cg("garbage\n0::/ok.scope\nmore garbage", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/ok.scope");
	/* A NUL poisons its line only. */
	ck_assert_int_eq(procinfo_parse_cgroup(with_nul, sizeof(with_nul) - 1, out, sizeof(out)),
			 0);
	ck_assert_str_eq(out, "/ok");
	/* len bounds the text, not a NUL. */
	ck_assert_int_eq(procinfo_parse_cgroup("0::/abc", 5, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/a");
	ck_assert_int_eq(parse_cg("0::/abcd\n", tiny, sizeof(tiny)), -ENAMETOOLONG);
	ck_assert_str_eq(tiny, "");
	ck_assert_int_eq(parse_cg("0::/ab\n", tiny, sizeof(tiny)), 0);
	ck_assert_str_eq(tiny, "/ab");
	ck_assert_int_eq(procinfo_parse_cgroup("0::/\n", 5, out, 0), -EINVAL);
}
END_TEST

START_TEST(test_cgroup_overlong)
{
	size_t big = 3 * PATH_MAX;
	char *text = malloc(big + 64), out[PATH_MAX];
	size_t n;

	ck_assert_ptr_nonnull(text);
	/* An overlong v2 path is refused whole, never truncated into another path. */
	strcpy(text, "0::/");
	memset(text + 4, 'x', big);
	strcpy(text + 4 + big, "\n");
	ck_assert_int_eq(parse_cg(text, out, sizeof(out)), -ENAMETOOLONG);
	ck_assert_str_eq(out, "");
	/* An overlong garbage line does not hide the good line after it. */
	memset(text, 'g', big);
	n = big;
	memcpy(text + n, "\n0::/fine.service\n", sizeof("\n0::/fine.service\n"));
	ck_assert_int_eq(parse_cg(text, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/fine.service");
	free(text);
}
END_TEST

/* --- environ ------------------------------------------------------------------------ */

static const char env_block[] = "PATHX=trap\0PATH=/usr/bin:/bin\0EMPTY=\0A=1\0A=2\0LAST=tail";

static int env(const char *name, char *out, size_t outlen)
{
	return procinfo_parse_environ(env_block, sizeof(env_block) - 1, name, out, outlen);
}

/* /proc/PID/stat lines: running, sleeping, zombie, exiting (PF_EXITING), odd comms, garbage. */
START_TEST(test_stat_exiting)
{
	static const struct {
		const char *text;
		bool exiting;
	} cases[] = {
		{"4242 (true) R 1 4242 4242 0 -1 4194560 100 0 0 0", false},
		{"4242 (true) S 1 4242 4242 0 -1 4194304 100 0 0 0", false},
		{"4242 (true) Z 1 4242 4242 0 -1 4227084 100 0 0 0", true},
		{"4242 (true) X 1 4242 4242 0 -1 0 100 0 0 0", true},
		{"4242 (true) R 1 4242 4242 0 -1 4194564 100 0 0 0", true}, /* PF_EXITING */
		{"4242 (a) Z (b) S 1 4242 4242 0 -1 4194304 1", false}, /* the last ')' counts */
		{"4242 (x y) D 1 2 3 0 -1 4 1", true},
		{"4242 (kworker/0:1) I 2 0 0 0 -1 69238880 0", false},
		{"4242 (true) R 1 4242", false}, /* cut before the flags */
		{"4242 (true) R 1 4242 4242 0 -1 ", false},
		{"4242 (true) R 1 4242 4242 0 -1 999999999999999999999999999", false},
		{"4242 (true", false},
		{"", false},
		{")", false},
		{") ", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(procinfo_parse_stat_exiting(cases[i].text, strlen(cases[i].text)) ==
				      cases[i].exiting,
			      "case %zu: %s", i, cases[i].text);
	/* not NUL-terminated: the length bounds the read */
	ck_assert(!procinfo_parse_stat_exiting("4242 (t) R 1 2 3 0 -1 4", 22));
}
END_TEST

START_TEST(test_environ)
{
	char out[64];

	ck_assert_int_eq(env("PATH", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/usr/bin:/bin");
	ck_assert_int_eq(env("PATHX", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "trap");
	/* Prefixes of a name, and names a value only starts with, are other variables. */
	ck_assert_int_eq(env("PAT", out, sizeof(out)), -ENOENT);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(env("PATHXY", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(env("usr", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(env("MISSING", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(env("EMPTY", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	/* The first of duplicates, as getenv; the last entry needs no NUL. */
	ck_assert_int_eq(env("A", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1");
	ck_assert_int_eq(env("LAST", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "tail");
	ck_assert_int_eq(procinfo_parse_environ("X=1\0", 4, "X", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1");
	ck_assert_int_eq(procinfo_parse_environ("", 0, "X", out, sizeof(out)), -ENOENT);
	/* An entry without '=' is no definition; a cut entry is not a match either. */
	ck_assert_int_eq(procinfo_parse_environ("X\0X", 3, "X", out, sizeof(out)), -ENOENT);
	ck_assert_int_eq(procinfo_parse_environ("X=12", 2, "X", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_environ_bounds)
{
	char out[5];

	ck_assert_int_eq(env("LAST", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "tail");
	ck_assert_int_eq(env("PATH", out, sizeof(out)), -ERANGE);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(env("", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(env("A=1", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(env("A", out, 0), -EINVAL);
	ck_assert_int_eq(env("EMPTY", out, 1), 0);
	ck_assert_int_eq(env("A", out, 1), -ERANGE);
}
END_TEST

/* --- live processes ----------------------------------------------------------------- */

START_TEST(test_read_self)
{
	struct proc_info *pi = malloc(sizeof(*pi));
	char exe[PATH_MAX], expect_cg[PATH_MAX], text[8192];
	ssize_t n;
	FILE *f;

	ck_assert_ptr_nonnull(pi);
	ck_assert_int_eq(procinfo_read(getpid(), pi), 0);
	ck_assert_int_eq(pi->pid, getpid());
	ck_assert_str_eq(pi->comm, "check_ember");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	ck_assert_str_eq(pi->exe, exe);
	ck_assert_ptr_nonnull(strstr(pi->cmdline, "check_ember"));
	ck_assert_ptr_null(strchr(pi->cmdline, '\n'));
	/* The cgroup is what the pure parser makes of the same file. */
	f = fopen("/proc/self/cgroup", "r");
	ck_assert_ptr_nonnull(f);
	n = (ssize_t)fread(text, 1, sizeof(text), f);
	fclose(f);
	if (procinfo_parse_cgroup(text, (size_t)n, expect_cg, sizeof(expect_cg)))
		expect_cg[0] = '\0';
	ck_assert_str_eq(pi->cgroup, expect_cg);
	ck_assert(pi->cgroup[0] == '\0' || pi->cgroup[0] == '/');
	free(pi);
}
END_TEST

/*
 * Waits until pid has exec'd into a process named comm; false after ~5 s. The kernel names
 * the process during execve before it lays out the new argv (create_elf_tables), so a
 * cmdline still empty means the exec is not done: seen on a loaded host.
 */
static bool wait_exec(pid_t pid, const char *comm, struct proc_info *pi)
{
	struct timespec ts = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 500; i++) {
		if (procinfo_read(pid, pi) == 0 && !strcmp(pi->comm, comm) && pi->cmdline[0])
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

START_TEST(test_read_child)
{
	char *const argv[] = {"ember-pi-child", "30", "1s", NULL};
	char *const envp[] = {"EMBER_PI_VARX=trap", "EMBER_PI_VAR=known value", "PATH=/bin", NULL};
	struct proc_info *pi = malloc(sizeof(*pi));
	char sleep_path[PATH_MAX], val[64];
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(pi);
	ck_assert_ptr_nonnull(realpath("/bin/sleep", sleep_path));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	ck_assert(wait_exec(pid, "sleep", pi));
	ck_assert_int_eq(pi->pid, pid);
	ck_assert_str_eq(pi->exe, sleep_path);
	ck_assert_str_eq(pi->cmdline, "ember-pi-child 30 1s");
	ck_assert_int_eq(procinfo_env(pid, "EMBER_PI_VAR", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "known value");
	ck_assert_int_eq(procinfo_env(pid, "EMBER_PI_VARX", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "trap");
	ck_assert_int_eq(procinfo_env(pid, "EMBER_PI", val, sizeof(val)), -ENOENT);
	ck_assert_int_eq(procinfo_env(pid, "HOME", val, sizeof(val)), -ENOENT);
	ck_assert_int_eq(procinfo_env(pid, "EMBER_PI_VAR", val, 4), -ERANGE);
	ck_assert_int_eq(procinfo_env(pid, "BAD=NAME", val, sizeof(val)), -EINVAL);

	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* Gone: reaped, its pid not (yet) reused. */
	ck_assert(procinfo_read(pid, pi) == -ENOENT || procinfo_read(pid, pi) == -ESRCH);
	ck_assert_int_eq(pi->pid, pid);
	ck_assert_str_eq(pi->comm, "");
	ck_assert_int_lt(procinfo_env(pid, "EMBER_PI_VAR", val, sizeof(val)), 0);
	free(pi);
}
END_TEST

START_TEST(test_read_gone)
{
	struct proc_info *pi = malloc(sizeof(*pi));
	char val[8];

	ck_assert_ptr_nonnull(pi);
	/* Above any pid_max (at most 2^22). */
	ck_assert_int_eq(procinfo_read(0x3fffffff, pi), -ENOENT);
	ck_assert_int_eq(procinfo_read(0, pi), -EINVAL);
	ck_assert_int_eq(procinfo_read(-1, pi), -EINVAL);
	ck_assert_int_eq(procinfo_env(0x3fffffff, "PATH", val, sizeof(val)), -ENOENT);
	free(pi);
}
END_TEST

START_TEST(test_hostname)
{
	char expect[256] = "";
	const char *h = procinfo_hostname();

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(gethostname(expect, sizeof(expect) - 1), 0);
	ck_assert_str_eq(h, expect);
	ck_assert_ptr_eq(procinfo_hostname(), h);
}
END_TEST

/* procinfo_fill reads the fields asked for, and only those, as procinfo_read would. */
START_TEST(test_fill_some)
{
	struct proc_info *all = malloc(sizeof(*all)), *pi = malloc(sizeof(*pi));
	int dirfd;

	ck_assert_ptr_nonnull(all);
	ck_assert_ptr_nonnull(pi);
	ck_assert_int_eq(procinfo_read(getpid(), all), 0);
	ck_assert_uint_eq(all->have, PROCINFO_ALL);
	dirfd = procinfo_open(getpid(), pi);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_uint_eq(pi->have, 0);
	ck_assert_int_eq(procinfo_fill(dirfd, PROCINFO_EXE, pi), 0);
	ck_assert_uint_eq(pi->have, PROCINFO_EXE);
	ck_assert_str_eq(pi->exe, all->exe);
	ck_assert_str_eq(pi->comm, ""); /* not read */
	ck_assert_str_eq(pi->cmdline, "");
	ck_assert_int_eq(procinfo_fill(dirfd, PROCINFO_CGROUP | PROCINFO_COMM, pi), 0);
	ck_assert_uint_eq(pi->have, PROCINFO_EXE | PROCINFO_CGROUP | PROCINFO_COMM);
	ck_assert_str_eq(pi->cgroup, all->cgroup);
	ck_assert_str_eq(pi->unit, all->unit);
	ck_assert_str_eq(pi->comm, "check_ember");
	ck_assert_str_eq(pi->cmdline, "");
	ck_assert_int_eq(procinfo_fill(dirfd, PROCINFO_ALL, pi), 0);
	ck_assert_str_eq(pi->cmdline, all->cmdline);
	close(dirfd);
	ck_assert_int_eq(procinfo_open(0, pi), -EINVAL);
	ck_assert_int_eq(procinfo_open(0x3fffffff, pi), -ENOENT);
	free(all);
	free(pi);
}
END_TEST

/* Through a directory fd opened before its exit, a gone process reads as gone. */
START_TEST(test_fill_gone)
{
	struct proc_info *pi = malloc(sizeof(*pi));
	pid_t pid = fork();
	int dirfd, st, err;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_ptr_nonnull(pi);
	dirfd = procinfo_open(pid, pi); /* not reaped yet: its directory is there */
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid); /* reaped: pid may be reused */
	err = procinfo_fill(dirfd, PROCINFO_COMM, pi);
	ck_assert_msg(err == -ESRCH || err == -ENOENT, "fill of a gone process: %d", err);
	close(dirfd);
	free(pi);
}
END_TEST

/* --- cgroup v2 ids to paths ---------------------------------------------------------- */

static const struct {
	const char *link, *mount, *path; /* path NULL: -EINVAL */
} under_cases[] = {
	{"/sys/fs/cgroup/unified/system.slice/a.service", "/sys/fs/cgroup/unified",
	 "/system.slice/a.service"},
	{"/sys/fs/cgroup/system.slice/a.service", "/sys/fs/cgroup", "/system.slice/a.service"},
	{"/sys/fs/cgroup", "/sys/fs/cgroup", "/"},
	{"/sys/fs/cgroup/x.scope (deleted)", "/sys/fs/cgroup", "/x.scope"},
	{"/sys/fs/cgroup (deleted)", "/sys/fs/cgroup", "/"},
	{"/sys/fs/cgroupx/a", "/sys/fs/cgroup", NULL},
	{"/sys/fs", "/sys/fs/cgroup", NULL},
	{"/other/a", "/sys/fs/cgroup", NULL},
	{"", "/sys/fs/cgroup", NULL},
};

START_TEST(test_cgroupid_under)
{
	char out[64];
	int err = cgroupid_path_under(under_cases[_i].link, strlen(under_cases[_i].link),
				      under_cases[_i].mount, out, sizeof(out));

	if (!under_cases[_i].path) {
		ck_assert_int_eq(err, -EINVAL);
		return;
	}
	ck_assert_int_eq(err, 0);
	ck_assert_str_eq(out, under_cases[_i].path);
}
END_TEST

START_TEST(test_cgroupid_under_bounds)
{
	static const char link[] = "/sys/fs/cgroup/ab";
	char out[4];

	ck_assert_int_eq(cgroupid_path_under(link, strlen(link), "/sys/fs/cgroup", out, 3),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cgroupid_path_under(link, strlen(link), "/sys/fs/cgroup", out, 4), 0);
	ck_assert_str_eq(out, "/ab");
	ck_assert_int_eq(cgroupid_path_under("/sys/fs/cgroup", 14, "/sys/fs/cgroup", out, 1),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cgroupid_path_under("/sys/fs/cgroup\0/a", 17, "/sys/fs/cgroup", out, 4),
			 -EINVAL);
}
END_TEST

/*
 * A cgroup made for the test: its id (the inode of its directory) resolves
 * to its path, and the root's to "/"; once removed, a new resolver says
 * -ESTALE, and one that resolved it before keeps its answer (ids are never
 * reused).
 */
START_TEST(test_cgroupid_live)
{
	struct cgroup_names *cn = cgroup_names_open(), *fresh;
	const char *mount;
	char dir[PATH_MAX], want[64], out[PATH_MAX];
	struct stat st, root;

	ck_assert_ptr_nonnull(cn);
	mount = cgroup_names_mount(cn);
	if (!mount) {
		printf("procinfo: no cgroup2 mount: cgroup ids not resolved here (not tested)\n");
		cgroup_names_close(cn);
		return;
	}
	if (geteuid()) {
		cgroup_names_close(cn);
		printf("procinfo: not root: cgroup ids not resolved (not tested)\n");
		return;
	}
	snprintf(want, sizeof(want), "/ember-check-%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s%s", mount, want);
	ck_assert_msg(!mkdir(dir, 0755), "mkdir %s: %s", dir, strerror(errno));
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(stat(mount, &root), 0);
	ck_assert_int_eq(cgroup_names_path(cn, st.st_ino, out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(cgroup_names_path(cn, root.st_ino, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/");
	ck_assert_int_eq(cgroup_names_path(cn, st.st_ino, out, 4), -ENAMETOOLONG);
	ck_assert_int_eq(cgroup_names_path(cn, 0, out, sizeof(out)), -ENOTSUP);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(cgroup_names_path(cn, st.st_ino, out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	fresh = cgroup_names_open();
	ck_assert_int_eq(cgroup_names_path(fresh, st.st_ino, out, sizeof(out)), -ESTALE);
	ck_assert_int_eq(cgroup_names_path(fresh, st.st_ino, out, sizeof(out)), -ESTALE);
	cgroup_names_close(fresh);
	cgroup_names_close(cn);
}
END_TEST

static int parse_stat(const char *text, struct proc_stat *st)
{
	return procinfo_parse_stat(text, strlen(text), st);
}

START_TEST(test_stat_parse)
{
	/* a real line of a busy process (fields past starttime cut) */
	static const char busy[] = "4242 (fx (a) b) R 1 4242 4242 34816 4242 4194304 120 0 0 0 "
				   "731 12 0 0 20 0 1 0 98765 2207744 87";
	struct proc_stat st;

	ck_assert_int_eq(procinfo_parse_stat(busy, strlen(busy), &st), 0);
	ck_assert_int_eq(st.state, 'R');
	ck_assert_uint_eq(st.flags, 4194304);
	ck_assert_uint_eq(st.cpu_ticks, 743);
	ck_assert_uint_eq(st.start_ticks, 98765);
	/* tty_nr may be negative; starttime may end the text */
	ck_assert_int_eq(parse_stat("1 (k) I 2 0 0 -1 -1 69238880 0 0 0 0 5 6 0 0 20 0 1 0 7", &st),
			 0);
	ck_assert_uint_eq(st.cpu_ticks, 11);
	ck_assert_uint_eq(st.start_ticks, 7);
	/* cut before starttime, before utime, garbage numbers, no comm */
	ck_assert_int_eq(procinfo_parse_stat(busy, 60, &st), -EINVAL);
	ck_assert_int_eq(parse_stat("1 (k) R 1 2 3 0 -1 4 1 2 3 4 x 5", &st), -EINVAL);
	ck_assert_int_eq(parse_stat("1 (k) R 1 2 3 0 -1 99999999999999999999999 1", &st), -EINVAL);
	ck_assert_int_eq(parse_stat("1 (k", &st), -EINVAL);
	ck_assert_int_eq(parse_stat("", &st), -EINVAL);
}
END_TEST

Suite *procinfo_suite(void)
{
	Suite *s = suite_create("procinfo");
	TCase *tc = tcase_create("parsers");
	TCase *live = tcase_create("live");

	tcase_add_loop_test(tc, test_unit_layouts, 0, sizeof(unit_cases) / sizeof(unit_cases[0]));
	tcase_add_test(tc, test_unit_bounds);
	tcase_add_loop_test(tc, test_container_layouts, 0,
			    sizeof(container_cases) / sizeof(container_cases[0]));
	tcase_add_test(tc, test_container_bounds);
	tcase_add_test(tc, test_cgroup_hybrid);
	tcase_add_test(tc, test_cgroup_v2);
	tcase_add_test(tc, test_cgroup_garbage);
	tcase_add_test(tc, test_cgroup_overlong);
	tcase_add_test(tc, test_stat_exiting);
	tcase_add_test(tc, test_stat_parse);
	tcase_add_test(tc, test_environ);
	tcase_add_test(tc, test_environ_bounds);
	tcase_add_loop_test(tc, test_cgroupid_under, 0,
			    sizeof(under_cases) / sizeof(under_cases[0]));
	tcase_add_test(tc, test_cgroupid_under_bounds);
	suite_add_tcase(s, tc);
	tcase_add_test(live, test_read_self);
	tcase_add_test(live, test_read_child);
	tcase_add_test(live, test_read_gone);
	tcase_add_test(live, test_cgroupid_live);
	tcase_add_test(live, test_fill_some);
	tcase_add_test(live, test_fill_gone);
	tcase_add_test(live, test_hostname);
	tcase_set_timeout(live, 30);
	suite_add_tcase(s, live);
	return s;
}
