"""Collective checks for tests that run on every rank of MPI.COMM_WORLD: a failure on one rank
fails the test on every rank, and no rank is left waiting in the next test's collectives."""

import halox


def check(comm, ok, what=""):
    """Asserts `ok` on every rank: fails on every rank when it is false on any, naming them."""
    results = comm.allgather((bool(ok), str(what)))
    bad = [f"rank {r}: {w}" for r, (o, w) in enumerate(results) if not o]
    assert not bad, "\n".join(bad)


def raises_everywhere(comm, fn, *, bad_ranks=None, match=None):
    """Runs fn(), which must raise halox.Error on every rank; on `bad_ranks` (default: all) the
    message must contain `match`; on the others it must say another rank rejected its input.
    Returns this rank's message."""
    msg = None
    try:
        fn()
    except halox.Error as e:
        msg = str(e)
    ok = msg is not None
    why = "no halox.Error" if msg is None else msg
    if ok and match is not None:
        mine = bad_ranks is None or comm.rank in bad_ranks
        ok = (match in msg) if mine else ("another rank rejected its input" in msg and match in msg)
    check(comm, ok, why)
    return msg
