"""The discovery calls timed by instructions.sh: python calls_discovery.py CALL COUNT."""
import sys
from leasehold import ANY, Announcement, DiscoveryService
op, k = sys.argv[1], int(sys.argv[2])
svc = DiscoveryService(7, seed=bytes(32))
reg, _ = svc.register(["printers"], ["lookup.example:4160"], b"h", ANY, 0)
for i in range(1, 11):
    svc.handle_announcement(Announcement(f"{i:032x}", ["printers"], f"10.0.0.{i}:4160", 1, 30_000), 0)
a = Announcement(f"{3:032x}", ["printers"], "10.0.0.3:4160", 1, 30_000)
ops = {
 "groups": lambda i: reg.groups(1),
 "registrars": lambda i: reg.registrars(1),
 "lease": lambda i: reg.lease(1),
 "announcement_new": lambda i: Announcement(f"{3:032x}", ["printers"], "10.0.0.3:4160", 1, 30_000),
 "handle_announcement": lambda i: svc.handle_announcement(a, 2),
 "register": lambda i: svc.register(["printers"], [], b"h", ANY, 3),
 "delivered": lambda i: svc.delivered(1, 1, 3),
}
f = ops[op]
for i in range(k):
    f(i)
