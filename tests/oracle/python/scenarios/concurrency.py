"""Several Python threads allocating through one resource: totals that do not depend on the
interleaving (counts, bytes, failures) are compared."""

import threading

from oracle_lib import register
from scen_util import make, stats_dict

THREADS = 4
PER_THREAD = 100


def _threads(name, with_buffers):
    def run(t):
        import rmm
        from rmm.pylibrmm.stream import Stream

        mr = rmm.mr.StatisticsResourceAdaptor(make(rmm, name))
        errors = []
        ok = [0] * THREADS

        def work(k):
            s = Stream()
            try:
                for i in range(PER_THREAD):
                    n = 256 * (1 + (i + k) % 16)
                    if with_buffers:
                        rmm.DeviceBuffer(size=n, mr=mr, stream=s)  # made and dropped
                    else:
                        p = mr.allocate(n, s)
                        mr.deallocate(p, n, s)
                    ok[k] += 1
                s.synchronize()
            except Exception as e:  # noqa: BLE001
                errors.append(type(e).__name__)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        c = stats_dict(mr.allocation_counts)
        t.rec("ok", ok)
        t.rec("errors", sorted(errors))
        t.rec("total", [c["total_count"], c["total_bytes"]])
        t.rec("current", [c["current_count"], c["current_bytes"]])
        t.rec("peak_count_in_range", 1 <= c["peak_count"] <= THREADS)

    return run


for _name in ["cuda", "cuda_async", "pool", "arena", "binning", "fixed_size", "managed",
              "tracking", "limiting"]:
    for _b in (False, True):
        register(_threads(_name, _b), __name__, f"threads/{_name}/{'buffers' if _b else 'raw'}")
