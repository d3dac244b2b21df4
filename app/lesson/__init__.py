"""The lesson: what the class is taught, apart from how the window draws it.

tour       the twelve chapters: their parameters, paged narration (assets/tour/) and the parts each beat frames
facts      the live numbers narration and panels quote, each from a model, the run or the hardware model
measured   the measurement files as the screen shows them: this computer's roofline, the hardware panel's rows
quiz       the questions, built from the models and the run when the quiz starts
prepared   a teacher's lesson file: which chapters, in what order, with what settings and notes
plan       the lesson's plan on paper (every note filled at its page's settings); walks a Controller
handout    the printable one-page student handout (PNG and PDF)

Nothing here draws: modes in app/modes/ and the scene in scenes/ show what these modules compute.
"""
