"""Self-drafting on a network (Medusa's heads, EAGLE's layer) and guess trees on a network, proved exact.

The enumeration runs the real passes (models.llm.speculative.speculative_pass, models.llm.tree.tree_pass) on tiny
random networks of a vocabulary of 4 with forced uniforms: every proposal with its probability (each guess drawn
from the middle of its token's slice of the row it was drawn from), every verdict path with its probability
(P(r < ratio) = min(1, ratio), the rule's own ratios), every final token over the row the rule drew it from. The
first token written must be distributed as the target's own row, whatever drafts.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from models.drafters import TreeDrafter
from models.llm.model import LlamaConfig, build_random
from models.llm.selfdraft import EagleDrafter, EagleProposer, MedusaHeads, MedusaProposer, eagle_config
from models.llm.speculative import ModelProposer, RowShaper, speculative_pass
from models.llm.steps import prefill
from models.llm.tree import DraftModelTree, EagleTree, MedusaTree, tree_pass

V = 4
CTX = [1, 3, 0, 2]
SHAPES = [RowShaper(1.0), RowShaper(0.7, top_k=3)]


@pytest.fixture(scope="module")
def nets():
    """A tiny target and draft over 4 tokens, random Medusa heads (not zero: each head its own row) and a random
    EAGLE layer on the target's features."""
    torch.manual_seed(0)
    cfg = replace(LlamaConfig.from_name("tiny"), vocab_size=V, max_position_embeddings=64)
    dcfg = replace(LlamaConfig.from_name("tiny-draft"), vocab_size=V, max_position_embeddings=64)
    target, draft = build_random(cfg, seed=1, std=0.5), build_random(dcfg, seed=2, std=0.5)
    heads = MedusaHeads(cfg.dim, 3)
    eagle = EagleDrafter(eagle_config(cfg))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in list(heads.parameters()) + list(eagle.parameters()):
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
        eagle.norm.weight.fill_(1.0)
    for m in (target, draft, eagle):
        m.setup_caches(1, 32)
    return target, draft, heads.eval(), eagle.eval()


def proposer_of(nets, which):
    target, draft, heads, eagle = nets
    return {"chain": lambda: ModelProposer(draft), "medusa": lambda: MedusaProposer(target, heads),
            "eagle": lambda: EagleProposer(target, eagle),
            "eagle_graph": lambda: EagleProposer(target, eagle, eagle_graph(target, eagle))}[which]()


def eagle_graph(target, eagle):
    """EAGLE's step as one ONNX Runtime graph (its draws made in the graph where the rows are a plain softmax)."""
    from models.llm import onnx_step
    if onnx_step.available(eagle.config) is not None:
        pytest.skip("ONNX Runtime's attention is not available here")
    return onnx_step.OnnxStep(eagle, 1, reads_features_of=target)


def tree_of(nets, base, widths, sampling):
    made = {"chain": lambda: DraftModelTree(ModelProposer(nets[1])),
            "heads": lambda: MedusaTree(MedusaProposer(nets[0], nets[2]), None),
            "eagle": lambda: EagleTree(EagleProposer(nets[0], nets[3]), None)}[base]()
    return TreeDrafter(made, widths=widths, sampling=sampling)


def fresh(target, proposer, ctx):
    """The caches hold ctx[:-1] (the target's and the proposer's, with the target's features); ctx[-1] is the
    pass's last token at position len(ctx) - 1."""
    logits, h = prefill(target, torch.tensor([ctx[:-1]]), features=True)
    if getattr(proposer, "wants_features", False):
        proposer.prefill(ctx[:-1], features=h[0])
    else:
        proposer.prefill(ctx[:-1])
    return torch.tensor([[ctx[-1]]]), len(ctx) - 1


def target_row(target, ctx, shape) -> np.ndarray:
    logits = prefill(target, torch.tensor([ctx]))
    return shape(logits)[0].double().numpy()


def middle_of(row: np.ndarray, x: int) -> float:
    """The uniform that draws x from row by the inverse CDF (the middle of x's slice, in float64 as drawn)."""
    cdf = np.cumsum(np.asarray(row, dtype=np.float32).astype(np.float64))
    lo = cdf[x - 1] if x else 0.0
    return float((lo + cdf[x]) / 2 / cdf[-1])


def outcomes(run, count_rows, n_uniforms):
    """Every outcome of one pass: yields (probability, tokens written). run(u_draw, r) makes the pass with those
    uniforms and returns (rows of the guesses in draw order, checks [(slot, ratio, accepted)], final row, written)."""
    def draws(prefix, prob):
        u = prefix + [0.5] * (n_uniforms - len(prefix))
        rows, _, _, _ = run(u, [0.0] * n_uniforms)
        i = len(prefix)
        if i >= len(rows):
            yield prob, u
            return
        row = np.asarray(rows[i], dtype=np.float64)
        for x in np.flatnonzero(row > 0):
            yield from draws(prefix + [middle_of(rows[i], x)], prob * row[x] / row.sum())

    for prob_g, u in draws([], 1.0):
        def verdicts(decided, prob):
            r = [0.0 if decided.get(j, True) else 1.0 for j in range(n_uniforms)]
            _, checks, final_row, written = run(u, r)
            for slot, ratio, ok in checks:
                if slot not in decided:
                    a = min(1.0, float(ratio))
                    if a > 0:
                        yield from verdicts({**decided, slot: True}, prob * a)
                    if a < 1:
                        yield from verdicts({**decided, slot: False}, prob * (1 - a))
                    return
                assert ok == decided[slot]
            final_row = np.asarray(final_row, dtype=np.float64)      # drawn by the inverse CDF over its sum
            assert abs(final_row.sum() - 1) < 1e-6 and final_row.min() >= 0
            for y in np.flatnonzero(final_row > 0):
                yield prob * final_row[y] / final_row.sum(), written[:-1] + [int(y)]
        yield from verdicts({}, prob_g)


def first_token(dist_of_pass) -> np.ndarray:
    out = np.zeros(V)
    for prob, written in dist_of_pass:
        out[written[0]] += prob
    return out


@pytest.mark.parametrize("which", ["chain", "medusa", "eagle", "eagle_graph"])
@pytest.mark.parametrize("shape", SHAPES, ids=["t1", "t0.7-top3"])
def test_every_chain_drafter_on_a_network_writes_exactly_p(nets, which, shape):
    target = nets[0]
    g = 2
    proposer = proposer_of(nets, which)

    def run(u_draw, r):
        cur, pos = fresh(target, proposer, CTX)
        u = torch.tensor(list(u_draw) + list(r) + [0.5], dtype=torch.float64)
        out = speculative_pass(target, proposer, CTX, cur, pos, g, u, shape)
        k = len(out.guess_ids)
        checks = [(j, out.ratios[j], j < out.n_accepted) for j in range(min(out.n_accepted + 1, k))]
        return list(out.q.numpy()), checks, out.final_row, out.tokens

    dist = first_token(outcomes(run, None, g))
    want = target_row(target, CTX, shape)
    assert abs(dist.sum() - 1) < 1e-9
    np.testing.assert_allclose(dist, want, atol=2e-6)


@pytest.mark.parametrize("base", ["chain", "heads", "eagle"])
@pytest.mark.parametrize("sampling", ["iid", "distinct"])
def test_every_tree_on_a_network_writes_exactly_p(nets, base, sampling):
    target = nets[0]
    shape = SHAPES[1] if sampling == "iid" else SHAPES[0]
    tree = tree_of(nets, base, [2, 1], sampling)
    n = tree.guess_uniforms(2)

    def run(u_draw, r):
        cur, pos = fresh(target, tree.base.proposer, CTX)
        out = tree_pass(target, tree, CTX, cur, pos, 2, np.array(u_draw), np.array(r), 0.5, shape)
        prop, tv = out.proposal, out.verdicts
        rows = [prop.q_rows[prop.q_of[i]] for i in range(len(prop.tokens))]
        return rows, [(c.node, c.ratio, c.accepted) for c in tv.checks], tv.final_row, out.tokens

    dist = first_token(outcomes(run, None, n))
    np.testing.assert_allclose(dist, target_row(target, CTX, shape), atol=2e-6)


@pytest.mark.parametrize("base", ["chain", "heads", "eagle"])
def test_after_a_trees_rollback_the_caches_hold_what_fresh_forwards_give(nets, base):
    """Passes with trees (the accepted path moved to its positions' slots): the target's cache holds the text as a
    fresh prefill of it does, and its next rows are a fresh forward's; EAGLE's cache holds the target's features."""
    target = nets[0]
    tree = tree_of(nets, base, [2, 2], "iid")
    prop = tree.base.proposer
    text = list(CTX)
    cur, pos = fresh(target, prop, text)
    gen = np.random.default_rng(5)
    moved = 0
    for _ in range(6):
        n = tree.guess_uniforms(2)
        u = gen.random(2 * n + 1)
        out = tree_pass(target, tree, text, cur, pos, 2, u[:n], u[n:2 * n], float(u[-1]), SHAPES[0])
        moved += any(a + 1 != d for d, a in enumerate(out.verdicts.accepted_path, start=1))
        text += out.tokens
        pos += out.n_accepted + 1
        cur = torch.tensor([[out.final_token]])
    held = [layer.attention.kv_cache.k_cache[:, :, :pos].clone() for layer in target.layers]
    logits, h = prefill(target, torch.tensor([text[:-1]]), features=True)
    for a, layer in zip(held, target.layers):
        torch.testing.assert_close(a, layer.attention.kv_cache.k_cache[:, :, :pos], atol=1e-5, rtol=1e-4)
    assert moved, "no pass kept a path off the first branch: the test did not test the move"
    if base == "eagle":
        torch.testing.assert_close(prop.f, h[0, -1], atol=1e-5, rtol=1e-4)   # the true features, not its own


def test_medusa_heads_start_as_the_targets_next_token_guess():
    """Zero-initialised blocks: every head's row is the output layer's row of the features (Medusa's start)."""
    heads = MedusaHeads(8, 3).eval()
    f = torch.randn(8)
    hf = heads.head_features(f, 3)
    assert hf.shape == (3, 8) and torch.equal(hf, f.expand(3, 8))
    with pytest.raises(Exception):
        MedusaProposer(None, heads).propose([0], torch.tensor([[0]]), 0, 4, torch.zeros(4), RowShaper())


def test_eagles_graph_computes_its_eager_layer(nets):
    """The layer as one ONNX Runtime graph (fc over [features, embedding], the decoder layer, the norm) gives the
    eager layer's features, writing the same cache, and its in-graph draw is the inverse CDF of its row."""
    target, _, _, eagle = nets
    graph = eagle_graph(target, eagle)
    gen = torch.Generator().manual_seed(9)
    f = torch.randn(1, 3, target.config.dim, generator=gen)
    toks = torch.tensor([[2, 0, 3]])
    with torch.inference_mode():
        want = eagle.next_features(f, target.tok_embeddings(toks), 4)
        k_eager = eagle.layers[0].attention.kv_cache.k_cache[:, :, 4:7].clone()
        got = graph.push(f, toks, 4)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(eagle.layers[0].attention.kv_cache.k_cache[:, :, 4:7], k_eager, atol=1e-5,
                                   rtol=1e-4)
        q, x, f_next = graph.guess(toks[:, :1], 7, torch.tensor(0.3, dtype=torch.float64), 1.0, features=f[0, 0])
        from models.llm.formats import linear, weight_operand
        from models.llm.rule import sample_index
        row = torch.softmax(linear(f_next[None], weight_operand(target.output))[0], -1)
        torch.testing.assert_close(q, row, atol=1e-6, rtol=1e-5)
        assert int(x) == int(sample_index(q, torch.tensor(0.3, dtype=torch.float64)))
