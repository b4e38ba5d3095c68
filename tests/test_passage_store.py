"""The on-disk passage store answers what the in-memory list did: by row, by id, row of an id."""

from __future__ import annotations

import pytest
from retrieval_fakes import PASSAGES

from disambig.errors import ConfigurationError
from disambig.retrieval.passage_store import MemoryPassages, PassageWriter, SqlitePassages, as_passages


@pytest.fixture
def stores(tmp_path):
    writer = PassageWriter(tmp_path / "passages.sqlite", "tiny")
    writer.add(0, 0, PASSAGES[:3])
    writer.add(1, 3, PASSAGES[3:])
    assert writer.close() == 4
    return SqlitePassages(tmp_path / "passages.sqlite"), MemoryPassages(PASSAGES)


def test_both_stores_give_the_same_answers(stores):
    on_disk, in_memory = stores
    for store in stores:
        assert len(store) == 4 and store[1] == PASSAGES[1]
        assert store.rows([3, 0, 3]) == [PASSAGES[3], PASSAGES[0], PASSAGES[3]]  # order kept, repeats allowed
        assert store.by_ids(["p4", "nope", "p2"]) == [PASSAGES[3], None, PASSAGES[1]]
        assert store.rows_of(["p3", "nope"]) == [2, None]
    assert list(on_disk) == list(in_memory) == PASSAGES


def test_a_row_outside_the_store_is_an_index_error(stores):
    with pytest.raises(IndexError, match=r"rows \[7\] are not in the passage store .* of 4"):
        stores[0].rows([1, 7])


def test_a_shard_is_stored_once_so_a_resumed_build_can_replay_it(tmp_path):
    writer = PassageWriter(tmp_path / "p.sqlite", "tiny")
    writer.add(0, 0, PASSAGES[:2])
    writer.add(0, 0, PASSAGES[:2])  # replayed after an interruption: skipped
    assert writer.has(0) and not writer.has(1) and writer.close() == 2


def test_a_duplicate_id_across_shards_is_named(tmp_path):
    writer = PassageWriter(tmp_path / "p.sqlite", "tiny")
    writer.add(0, 0, PASSAGES[:2])
    with pytest.raises(ConfigurationError, match="corpus 'tiny': duplicate passage id 'p2' \\(shard 1\\)"):
        writer.add(1, 2, [PASSAGES[2], PASSAGES[1]])
    assert not writer.has(1) and writer.close() == 2  # the failed shard left nothing behind


def test_a_list_is_wrapped_and_a_store_kept(stores):
    assert isinstance(as_passages(PASSAGES), MemoryPassages)
    assert as_passages(stores[0]) is stores[0]
