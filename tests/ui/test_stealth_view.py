"""The stealth view reads on its own: the map is zoomed to its dots with the chosen photo named on it, its text
alternative gives the photo's distances, and a detector's AUROC is said in words; on synthetic points, then once
on the shipped default model."""

from types import SimpleNamespace

import numpy as np
import pytest

from sua_demo.analysis import embedding_map
from sua_demo.core.errors import SuaError
from sua_demo.ui.attack import stealth

WHO = "#7 Test Person, photo 5"


def synthetic_points(outlier: bool = False, visitor_at: tuple[float, float] = (3.0, 2.5)) -> list[dict]:
    """30 bench photos in a unit cloud, each with a noisy and denoised twin nearby, and the visitor's photo."""
    rng = np.random.default_rng(0)
    clean = rng.uniform(-1, 1, size=(30, 2))
    shifts = {"clean": 0.0, "noisy": 0.3, "denoised": 0.25}
    points = [
        {"x": float(x + shifts[c]), "y": float(y), "condition": c, "group": "forget" if i % 2 else "retain",
         "who": f"#{i} Bench Person, photo 0"}
        for c in embedding_map.CONDITIONS
        for i, (x, y) in enumerate(clean)
    ]  # fmt: skip
    if outlier:
        points[0] = {**points[0], "x": 500.0, "y": -400.0}
    vx, vy = visitor_at
    for c, dx in zip(embedding_map.CONDITIONS, (0.0, 1.0, 1.1), strict=True):
        points.append({"x": vx + dx, "y": vy, "condition": c, "group": "yours", "who": WHO})
    return points


def test_the_zoom_holds_the_inner_box_and_every_visitor_point():
    points = synthetic_points(visitor_at=(6.0, -5.0))  # well outside the cloud
    (x0, x1), (y0, y1) = embedding_map.view_range(points)
    bench = np.array([[p["x"], p["y"]] for p in embedding_map.bench_points(points)])
    q0, q1 = embedding_map.INNER_QUANTILES
    lo, hi = np.quantile(bench, q0, axis=0), np.quantile(bench, q1, axis=0)
    assert x0 < lo[0] and x1 > hi[0] and y0 < lo[1] and y1 > hi[1]
    for p in embedding_map.visitor_points(points).values():
        assert x0 < p["x"] < x1 and y0 < p["y"] < y1
    fig = embedding_map.figure(points)
    assert tuple(fig.layout.xaxis.range) == (x0, x1) and tuple(fig.layout.yaxis.range) == (y0, y1)


def test_a_far_outlier_is_left_out_of_view_and_the_text_counts_it():
    points = synthetic_points(outlier=True)
    (x0, x1), _ = embedding_map.view_range(points)
    assert x1 < 50  # the view stays on the cloud, not stretched to the dot at x = 500
    assert len(embedding_map.figure(points).data[0].x) == 30  # the dot stays in the data, for hover
    assert embedding_map.out_of_view(points, embedding_map.view_range(points)) == 1
    assert "1 outlying bench dots lie outside the zoomed view" in embedding_map.describe(points)


def test_the_axes_say_what_they_are():
    fig = embedding_map.figure(synthetic_points())
    x, y = fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
    assert x.startswith("map axis 1") and y.startswith("map axis 2")
    assert "similar" in x and "no meaning" in y


def test_the_chosen_photo_is_big_stars_drawn_last_with_its_name_on_the_figure():
    fig = embedding_map.figure(synthetic_points(), title="short")
    top = fig.data[-1]
    assert top.name == embedding_map.VISITOR_TRACE and top.marker.symbol == "star"
    assert min(top.marker.size) > max(8, fig.data[0].marker.size)  # bigger than any bench dot
    assert all(WHO in t for t in top.text)
    labels = [a.text for a in fig.layout.annotations if a.text]
    assert labels == [f"<b>{WHO}</b>"]


def test_a_long_photo_name_is_cut_on_the_figure_only():
    long = "#12 A Person With A Remarkably Long Fictitious Name, photo 5"
    points = stealth.name_photo(synthetic_points(), long)
    label = next(a.text for a in embedding_map.figure(points).layout.annotations if a.text)
    assert label.endswith("…</b>") and len(label) <= embedding_map.LABEL_CHARS + len("<b></b>")
    assert long in embedding_map.describe(points)


def test_describe_names_the_photo_and_gives_its_distances_against_the_bench():
    text = embedding_map.describe(synthetic_points())
    assert WHO in text and "big stars" in text
    assert "0.10 map units from its denoised twin (bench average 0.05, farther than average)" in text
    assert "1.00 from its clean point (bench average 0.30, farther than average)" in text
    assert "lands nearest to the clean dot of #" in text


def test_describe_without_a_chosen_photo_keeps_the_bench_sentence():
    points = [p for p in synthetic_points() if p["group"] != "yours"]
    text = embedding_map.describe(points)
    assert text.startswith("Map of 30 bench photos") and "big stars" not in text
    assert embedding_map.describe([]) == "No points."


@pytest.mark.parametrize(
    ("auroc", "words"),
    [
        (0.5, ["50 % of the time", "no better than tossing a coin"]),
        (0.72, ["72 % of the time", "often notices δ, but far from always"]),
        (1.0, ["100 % of the time", "catches δ every time"]),
    ],
)
def test_auroc_is_said_in_words(auroc, words):
    text = stealth.auroc_in_words(auroc)
    assert "one attacked photo and one clean photo picked at random" in text and "denoised copy" in text
    assert "0.5 is chance, 1 is a perfect detector" in text
    assert all(w in text for w in words)


def test_the_two_readings_are_compared_the_right_way_round():
    assert "drops from 79 % without it to 72 % with it" in stealth.compare_readings(0.72, 0.79)
    assert "did not help" in stealth.compare_readings(0.8, 0.7)
    assert "almost no difference" in stealth.compare_readings(0.70, 0.71)


def fake_engine(plain: bool) -> SimpleNamespace:
    """An engine with a report and synthetic maps: the comparison's captions without fitting a map."""
    noise = SimpleNamespace(eps=16 / 255)
    report = {
        "config": {"attack": {"denoiser": "gaussian"}},
        "splits": [{"stealth": {"sua": {"detector_auroc": 0.72}, "sua_plain": {"detector_auroc": 0.79}}}],
    }
    sess = SimpleNamespace(name="idk", shipped_noise=noise, plain_noise=noise if plain else None, report=report)
    bench = [p for p in synthetic_points() if p["group"] != "yours"]
    return SimpleNamespace(session=lambda model: sess, embedding_map=lambda s, n, d, user_image=None: bench)


def test_the_first_caption_explains_and_the_second_compares():
    left, right, first, second = stealth.stealth_comparison(fake_engine(plain=True), "idk", "median")
    assert "72 % of the time" in first and "How to read the map" in first and "Blue: the clean photo" in first
    assert "with the gaussian denoiser (this map uses median)" in first
    assert "79 % of the time" in second and "drops from 79 % without it to 72 % with it" in second
    assert "How to read the map" not in second
    for fig in (left, right):
        assert len(fig.layout.title.text) <= stealth.TITLE_CHARS


def test_a_model_without_a_plain_noise_gets_one_map_and_says_why():
    left, right, first, second = stealth.stealth_comparison(fake_engine(plain=False), "idk")
    assert left is not None and right is None and second == stealth.NO_PLAIN and "72 %" in first
    engine = fake_engine(plain=True)
    engine.session("idk").shipped_noise = None
    with pytest.raises(SuaError, match="no shipped noise"):
        stealth.stealth_comparison(engine, "idk")


def test_the_shipped_model_map_and_comparison_name_the_photo_and_say_auroc_in_words(engine):
    """The shipped default model (one map fit per noise, cached per engine): real figures and captions."""
    from sua_demo.engine import DEFAULT_MODEL

    pid = engine.bench.forget_ids[0]
    who = f"#{pid} {engine.person(pid).name}, photo 5"
    from sua_demo.engine.look import Request, look

    req = Request(model=DEFAULT_MODEL, person=f"#{pid}", photo=5)
    fig, caption = stealth.map_view(next(look(engine, req, ("map",))))
    assert fig.data[-1].name == embedding_map.VISITOR_TRACE
    assert any(a.text == f"<b>{embedding_map.short_label(who)}</b>" for a in fig.layout.annotations)
    assert f"**On the map: {who}**" in caption and "% of the time" in caption and "bench average" in caption
    assert len(fig.layout.title.text) <= stealth.TITLE_CHARS
    left, right, first, second = stealth.stealth_comparison(engine, DEFAULT_MODEL, "gaussian")
    plain = engine.session(DEFAULT_MODEL).plain_noise  # a δ fitted without the stealth term, where the world ships one
    assert left.layout.title.text == "with the stealth term" and (right is not None) == (plain is not None)
    assert "% of the time" in first and "0.5 is chance" in first and "How to read the map" in first
    assert ("% of the time" in second) == (plain is not None) and "stealth term" in second
