"""One panel per mode; each sets the table's view on entry, draws its ImGui panel, and answers next/previous."""
from app.modes.exploded import ExplodedPanel
from app.modes.hardware import HardwarePanel
from app.modes.lab import LabPanel
from app.modes.quiz import QuizPanel
from app.modes.step import StepPanel
from app.modes.tour import TourPanel
from app.modes.tubes import TubesPanel

MODE_PANELS = {
    "tour": TourPanel,
    "lab": LabPanel,
    "step": StepPanel,
    "tubes": TubesPanel,
    "exploded": ExplodedPanel,
    "hardware": HardwarePanel,
    "quiz": QuizPanel,
}
