"""Which parts each view and framed beat puts on the table, and which parts go together: what rides with
a part when the table is taken apart, what a part is built with, what a framed beat draws beside the parts it
names (scenes.stage reads these)."""

# Which part each close-up view is about (its title in the HUD; the exploded view lifts them all).
VIEW_PART = {"bigdrum": "bigdrum", "readhead": "readhead", "cutaway": "readhead", "smalldrum": "smalldrum",
             "tape": "tape", "bridge": "bridge", "mill": "mill", "cabinet": "cabinet", "tubes": "tubes"}
# A close-up lifts its part out and shows it alone on the table, with the parts it works with.
VIEW_SHOWS = {
    "bigdrum": {"table", "bigdrum", "readhead"},
    "readhead": {"table", "bigdrum", "readhead"},
    "cutaway": {"table", "bigdrum", "readhead"},
    "smalldrum": {"table", "smalldrum", "pencil", "tape", "typing"},
    "mill": {"table", "mill", "bigdrum", "readhead"},
    "cabinet": {"table", "cabinet"},
    "tubes": {"table", "tubes"},
}
# Parts that ride along with another part when the table is taken apart: the pencil cart's rail runs along the
# tape (it writes there), so the small drum can be lifted clear of the bridge without dragging the rail along.
LIFT_WITH = {"pencil": "tape", "typing": "tape"}
# What a part is built with and so partly behind by design, not hidden by it (Stage.occlusion): the read head
# sits under the big drum and covers the lower half of its pins from any view that reads the drum.
ASSEMBLED_WITH = {"bigdrum": ("readhead",)}
HIDDEN_BEHIND = 0.5     # a framed part more than half hidden by other parts is reported (beat_report)
RIDERS = {"smalldrum": ("pencil",), "tape": ("typing",)}
# A framed beat (set_focus) draws the parts it names, what rides with them, and what they work with.
FOCUS_WITH = {"bigdrum": ("readhead",), "readhead": ("bigdrum",)}
FOCUS_VIEWS = ("table", "cutaway", "exploded")     # how the table stands while parts are framed
# What the HUD says over a framed beat of the table taken apart (Stage.hud_lines), instead of the pass and its
# phase: the beat is about the parts lifted out, and with the parts apart (the tape's characters may be too small
# to draw) a phase line ("one turn of the big drum checks every guess") would describe what the class cannot follow.
EXPLODED_HUD = (("拆开来看 · 每一件单独托出", "taken apart · each part lifted out"),)
