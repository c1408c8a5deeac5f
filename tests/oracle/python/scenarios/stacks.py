"""Adaptors over every resource, and every resource as the current one: the same sequence of
allocations (zero bytes included) through statistics, tracking and limiting adaptors."""

from oracle_lib import register
from scen_util import RESOURCES, make, ptr_facts, stats_dict

SEQUENCE = [0, 1, 0, 256, 1000, 4096, 1 << 20, 0]


def _over(adaptor, name):
    def run(t):
        import rmm

        up = make(rmm, name)
        if adaptor == "statistics":
            mr = rmm.mr.StatisticsResourceAdaptor(up)
            facts = lambda: stats_dict(mr.allocation_counts)  # noqa: E731
        elif adaptor == "tracking":
            mr = rmm.mr.TrackingResourceAdaptor(up)
            facts = lambda: [mr.get_allocated_bytes(),  # noqa: E731
                             mr.get_outstanding_allocations_str() == ""]
        else:
            mr = rmm.mr.LimitingResourceAdaptor(up, 1 << 21)
            facts = lambda: mr.get_allocated_bytes()  # noqa: E731
        live = []
        for i, n in enumerate(SEQUENCE):
            p = t.call(f"alloc{i}:{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                live.append((p, n))
            t.rec(f"facts{i}", facts())
        for p, n in live:
            t.call(f"free:{n}", mr.deallocate, p, n)
        t.rec("facts_end", facts())

    return run


def _as_current(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        rmm.mr.set_current_device_resource(mr)
        t.rec("current_is_set", rmm.mr.get_current_device_resource() is mr)
        bufs = []
        for n in [0, 1, 1000, 1 << 20]:
            b = t.call(f"buffer{n}", rmm.DeviceBuffer, size=n, conv=lambda b: b.size)
            if b is not None:
                bufs.append(b)
        if bufs:
            t.call("copy", lambda: bufs[-1].copy().size)
            t.call("to_device", lambda: rmm.DeviceBuffer.to_device(b"abc").tobytes())
            t.call("resize", bufs[-1].resize, 5000)
            t.call("content_size", lambda: len(bufs[-1].tobytes()))
        if hasattr(mr, "allocation_counts"):
            t.rec("counts", stats_dict(mr.allocation_counts))
        bufs.clear()
        import gc

        gc.collect()
        if hasattr(mr, "allocation_counts"):
            t.rec("counts_end", stats_dict(mr.allocation_counts))

    return run


for _name in RESOURCES:
    for _ad in ("statistics", "tracking", "limiting"):
        register(_over(_ad, _name), __name__, f"{_ad}_over/{_name}")
    if _name != "pinned_host":
        register(_as_current(_name), __name__, f"as_current/{_name}")
