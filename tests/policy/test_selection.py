from fedfit.policy import uniform_cohort


def test_cohort_depends_only_on_seed_and_round() -> None:
    ids = list(range(50))
    unbroken = [uniform_cohort(ids, 10, seed=7, round_=r) for r in range(6)]
    resumed = [uniform_cohort(ids, 10, seed=7, round_=r) for r in range(3, 6)]  # restart at round 3
    assert unbroken[3:] == resumed
    assert uniform_cohort(list(reversed(ids)), 10, seed=7, round_=2) == unbroken[2]


def test_cohort_is_distinct_and_capped() -> None:
    cohort = uniform_cohort([3, 1, 2], 10, seed=0, round_=0)
    assert sorted(cohort) == [1, 2, 3]
    big = uniform_cohort(list(range(100)), 20, seed=1, round_=4)
    assert len(set(big)) == 20


def test_selection_is_roughly_uniform() -> None:
    counts = [0] * 10
    for r in range(2000):
        for d in uniform_cohort(list(range(10)), 3, seed=0, round_=r):
            counts[d] += 1
    assert all(abs(c - 600) < 90 for c in counts)  # 2000*3/10 = 600 expected, ~4 sigma
