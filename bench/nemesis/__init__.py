"""`make nemesis`: one long run of the topology while a nemesis, from a printed seed, hits its
processes at random instants, then a checker that compares the results with an independent count
of the input (docs/faults.md, "make nemesis").

Jepsen's shape: a generator (`plan`: the faults drawn from the seed, pure), a nemesis that carries
them out against real processes (`processes`: who to signal; `runner`: the loop, which resumes the
run with the same RUN_ID after each driver death, as a user would, and writes a console line per
fault and recovery), and a checker that reads only durable results (`check`).
"""
