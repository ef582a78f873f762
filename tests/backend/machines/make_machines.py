#!/usr/bin/env python3
"""Writes the fixture machine trees DeviceInfo's tests read through DeviceProbe::root.

Each tree holds the parts of /sys and /proc that DeviceInfo reads (and cpuid.txt, the CPUID
answers a fixture gives in place of the instruction). The trees are committed; rerun this after
changing a machine here: tests/backend/machines/make_machines.py (it rewrites every tree).
The expected DeviceInfo of each tree is written out in device_info_machines_test.cpp.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def cpulist(cpus):
    cpus = sorted(cpus)
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def machine(name, cpus, model, vendor_id="GenuineIntel", flags="", features="",
            implementer=None, caches=None, cpuid=None, meminfo=(16 << 20, 12 << 20),
            loadavg="0.10 0.20 0.30 1/300 4242", allowed=None, cgroup=None, power=(),
            profile=None, thermal=(), stat=None, hybrid=None, sysfs_topology=True,
            loadavg_later=None):
    """cpus: list of dicts {cpu, package, core (siblings list), cluster, capacity, khz}; on x86
    /proc/cpuinfo names each CPU's "physical id" and "core id" (the lowest sibling, or the
    dict's cpuinfo_core when it claims another topology than sysfs); sysfs_topology=False
    leaves out sysfs's topology directories."""
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    online = [c["cpu"] for c in cpus]
    write(root, "sys/devices/system/cpu/online", cpulist(online))
    write(root, "sys/devices/system/cpu/present", cpulist(online))
    for c in cpus:
        base = f"sys/devices/system/cpu/cpu{c['cpu']}"
        if sysfs_topology:
            write(root, f"{base}/topology/physical_package_id", str(c.get("package", 0)))
            write(root, f"{base}/topology/core_cpus_list", cpulist(c["core"]))
            write(root, f"{base}/topology/thread_siblings_list", cpulist(c["core"]))
            write(root, f"{base}/topology/cluster_id", str(c.get("cluster", 65535)))
        if "capacity" in c:
            write(root, f"{base}/cpu_capacity", str(c["capacity"]))
        if "khz" in c:
            write(root, f"{base}/cpufreq/cpuinfo_max_freq", str(c["khz"]))
        for i, (level, kind, size, shared) in enumerate((caches or {}).get(c["cpu"], [])):
            d = f"{base}/cache/index{i}"
            write(root, f"{d}/level", str(level))
            write(root, f"{d}/type", kind)
            write(root, f"{d}/size", size)
            write(root, f"{d}/shared_cpu_list", cpulist(shared))
    if hybrid:
        write(root, "sys/devices/cpu_core/cpus", cpulist(hybrid[0]))
        write(root, "sys/devices/cpu_atom/cpus", cpulist(hybrid[1]))
    info = []
    for c in cpus:
        info.append(f"processor\t: {c['cpu']}")
        if implementer:
            info.append(f"CPU implementer\t: {implementer}")
            info.append(f"Features\t: {features}")
        else:
            info.append(f"vendor_id\t: {vendor_id}")
            info.append(f"model name\t: {model}")
            info.append(f"physical id\t: {c.get('package', 0)}")
            info.append(f"core id\t\t: {c.get('cpuinfo_core', min(c['core']))}")
            info.append(f"flags\t\t: {flags}")
        info.append("")
    write(root, "proc/cpuinfo", "\n".join(info))
    write(root, "proc/meminfo",
          f"MemTotal:       {meminfo[0]} kB\nMemFree:        1000 kB\nMemAvailable:   {meminfo[1]} kB")
    write(root, "proc/loadavg", loadavg)
    if loadavg_later is not None:
        write(root, "proc/loadavg.later", loadavg_later)
    status = "Name:\ttessera\n"
    status += f"Cpus_allowed_list:\t{cpulist(allowed if allowed is not None else online)}\n"
    write(root, "proc/self/status", status)
    write(root, "proc/self/cgroup", cgroup[0] if cgroup else "0::/\n")
    if cgroup:
        for path, text in cgroup[1].items():
            write(root, path, text)
    for supply in power:
        for key, value in supply.items():
            if key != "name":
                write(root, f"sys/class/power_supply/{supply['name']}/{key}", str(value))
    if profile:
        write(root, "sys/firmware/acpi/platform_profile", profile)
    for i, (kind, temp, trips) in enumerate(thermal):
        z = f"sys/class/thermal/thermal_zone{i}"
        write(root, f"{z}/type", kind)
        write(root, f"{z}/temp", str(temp))
        for t, (ttype, ttemp) in enumerate(trips):
            write(root, f"{z}/trip_point_{t}_type", ttype)
            write(root, f"{z}/trip_point_{t}_temp", str(ttemp))
    if stat:
        write(root, "proc/stat", stat[0])
        write(root, "proc/stat.later", stat[1])
        write(root, "proc/self/stat", stat[2])
        write(root, "proc/self/stat.later", stat[3])
    if cpuid:
        write(root, "cpuid.txt", "# leaf subleaf eax ebx ecx edx (hex)\n" + cpuid)


def smt_cpus(cores, threads, package=0, start=0, **extra):
    """`cores` cores of `threads` threads, Linux numbering (siblings cores apart)."""
    out = []
    n = cores * threads
    for t in range(threads):
        for c in range(cores):
            cpu = start + t * cores + c
            siblings = [start + k * cores + c for k in range(threads)]
            out.append(dict(cpu=cpu, package=package, core=siblings, **extra))
    out.sort(key=lambda c: c["cpu"])
    assert len(out) == n
    return out


X86_FLAGS = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2"
AMD_VM_FLAGS = X86_FLAGS + " avx512f avx512bw avx512_vnni avx512_bf16"

# The 2-core AMD EPYC virtual machine: topology and capacities, no cpufreq, no cache
# directories, cgroup v1 without a quota. Its CPUID answers were read on such a machine: leaf
# 0x8000001D is empty there, so the caches come from the older leaves 0x80000005/6.
machine(
    "amd_vm",
    [dict(cpu=c, core=[c], capacity=1024) for c in range(2)],
    "AMD EPYC", vendor_id="AuthenticAMD", flags=AMD_VM_FLAGS,
    cgroup=("1:cpu:/\n0::/\n", {"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1",
                                 "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}),
    cpuid="0 0 d 68747541 444d4163 69746e65\n"
          "80000000 0 80000021 68747541 444d4163 69746e65\n"
          "80000001 0 b00f21 40000000 440001f1 25d3fbff\n"
          "8000001d 0 0 0 0 0\n"
          "80000005 0 ff60ff40 ff60ff40 300c0140 20080140\n"
          "80000006 0 40802040 60804040 4006140 fe09140\n")

# An Intel hybrid laptop (i7-1260P-like): 4 P-cores with 2 threads (CPUs 0-7), 8 E-cores
# (CPUs 8-15, L2 shared by 4), on mains, battery charging at 80 %.
p_cores = smt_cpus(4, 2, khz=4700000)
for c in p_cores:
    c["core"] = [2 * (c["cpu"] // 2), 2 * (c["cpu"] // 2) + 1]
e_cores = [dict(cpu=8 + i, core=[8 + i], khz=3400000) for i in range(8)]
hybrid_caches = {}
for c in p_cores:
    hybrid_caches[c["cpu"]] = [(1, "Data", "48K", c["core"]), (1, "Instruction", "32K", c["core"]),
                               (2, "Unified", "1280K", c["core"]), (3, "Unified", "18432K", range(16))]
for c in e_cores:
    group = [8 + 4 * ((c["cpu"] - 8) // 4) + k for k in range(4)]
    hybrid_caches[c["cpu"]] = [(1, "Data", "32K", [c["cpu"]]), (1, "Instruction", "64K", [c["cpu"]]),
                               (2, "Unified", "2048K", group), (3, "Unified", "18432K", range(16))]
machine(
    "intel_hybrid_laptop", p_cores + e_cores, "12th Gen Intel(R) Core(TM) i7-1260P",
    flags=X86_FLAGS, caches=hybrid_caches, hybrid=(range(8), range(8, 16)),
    power=[dict(name="AC", type="Mains", online=1),
           dict(name="BAT0", type="Battery", present=1, status="Charging", capacity=80)],
    profile="balanced",
    thermal=[("x86_pkg_temp", 55000, [("passive", 95000), ("critical", 105000)])])

# An Arm big.LITTLE phone: 4 LITTLE (capacity 400), 3 big (870), 1 prime (1024); a battery
# named "battery" discharging at 15 %, USB not connected; no cache directories.
phone = ([dict(cpu=c, core=[c], cluster=0, capacity=400, khz=1800000) for c in range(4)] +
         [dict(cpu=c, core=[c], cluster=1, capacity=870, khz=2400000) for c in range(4, 7)] +
         [dict(cpu=7, core=[7], cluster=2, capacity=1024, khz=3000000)])
phone_common = dict(implementer="0x41", features="fp asimd evtstrm aes crc32 atomics fphp asimdhp asimddp bf16",
                    thermal=[("cpu-thermal", 41000, [("passive", 85000)])])
machine("arm_phone_battery", phone, "", power=[
    dict(name="battery", type="Battery", present=1, status="Discharging", capacity=15),
    dict(name="usb", type="USB", online=0)], **phone_common)
machine("arm_phone_mains", phone, "", power=[
    dict(name="battery", type="Battery", present=1, status="Charging", capacity=15),
    dict(name="usb", type="USB", online=1)], **phone_common)

# A 4-core desktop where this process may run on CPU 2 only.
desktop = [dict(cpu=c, core=[c], khz=4200000) for c in range(4)]
desktop_caches = {c: [(1, "Data", "32K", [c]), (2, "Unified", "512K", [c]), (3, "Unified", "16M", range(4))]
                  for c in range(4)}
machine("affinity_one_cpu", desktop, "Desktop CPU", flags=X86_FLAGS, caches=desktop_caches, allowed=[2])

# The same desktop in a cgroup v2 with a quota of 1.5 CPUs set one level up.
machine("cgroup_quota", desktop, "Desktop CPU", flags=X86_FLAGS, caches=desktop_caches,
        cgroup=("0::/app.slice/worker.service\n",
                {"sys/fs/cgroup/cpu.max": "max 100000",
                 "sys/fs/cgroup/app.slice/cpu.max": "150000 100000",
                 "sys/fs/cgroup/app.slice/worker.service/cpu.max": "max 100000"}))

# A 4-core, 8-thread laptop on battery at 15 %: mains offline, power-saving platform profile.
laptop = smt_cpus(4, 2, khz=4000000)
machine("laptop_battery_low", laptop, "Laptop CPU", flags=X86_FLAGS,
        power=[dict(name="ADP1", type="Mains", online=0),
               dict(name="BAT1", type="Battery", present=1, status="Discharging", capacity=15)],
        profile="low-power")

# A hot device past its passive trip point (second zone), on mains.
machine("hot_device", desktop, "Desktop CPU", flags=X86_FLAGS, caches=desktop_caches,
        power=[dict(name="AC", type="Mains", online=1)],
        thermal=[("acpitz", 50000, [("critical", 110000)]),
                 ("x86_pkg_temp", 98000, [("passive", 95000), ("critical", 105000)])])

# A 2-CPU machine where another process keeps one CPU busy: CPU 1 spent all of the 100 jiffies
# between the two /proc/stat samples busy, CPU 0 idle, this process none.
ONE_CPU_BUSY_STAT = ("cpu  1000 0 1000 8000 0 0 0 0 0 0\ncpu0 500 0 500 4000 0 0 0 0 0 0\n"
                     "cpu1 500 0 500 4000 0 0 0 0 0 0\n",
                     "cpu  1100 0 1000 8100 0 0 0 0 0 0\ncpu0 500 0 500 4100 0 0 0 0 0 0\n"
                     "cpu1 600 0 500 4000 0 0 0 0 0 0\n",
                     "4242 (tessera run) S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 100 0 0\n",
                     "4242 (tessera run) S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 100 0 0\n")
machine("busy_neighbour", [dict(cpu=c, core=[c]) for c in range(2)], "AMD EPYC",
        vendor_id="AuthenticAMD", flags=X86_FLAGS, loadavg="1.00 1.00 1.00 2/120 999",
        stat=ONE_CPU_BUSY_STAT)

# The same samples, but /proc/loadavg counts one runnable task (the reader): nothing else runs
# now, so a load takes no window (and would not read the samples).
machine("idle_now", [dict(cpu=c, core=[c]) for c in range(2)], "AMD EPYC",
        vendor_id="AuthenticAMD", flags=X86_FLAGS, loadavg="1.00 1.00 1.00 1/120 999",
        stat=ONE_CPU_BUSY_STAT)

# The same samples, and a second runnable task at the load's first read of /proc/loadavg (a
# pipe's reader starting up) that is gone at the next: nothing keeps a CPU busy, no window.
machine("passing_task", [dict(cpu=c, core=[c]) for c in range(2)], "AMD EPYC",
        vendor_id="AuthenticAMD", flags=X86_FLAGS, loadavg="1.00 1.00 1.00 2/120 999",
        loadavg_later="1.00 1.00 1.00 1/120 999", stat=ONE_CPU_BUSY_STAT)

# A 2-core, 4-thread machine in a container that hides sysfs's topology directories: the cores
# come from /proc/cpuinfo's physical and core ids.
machine("container_smt", smt_cpus(2, 2), "Container CPU", flags=X86_FLAGS, sysfs_topology=False)

# sysfs says 4 single-thread cores, /proc/cpuinfo pairs them into 2 cores: sysfs is used and
# the disagreement noted.
machine("cpuinfo_disagrees", [dict(cpu=c, core=[c], cpuinfo_core=c // 2) for c in range(4)],
        "Odd CPU", flags=X86_FLAGS)
