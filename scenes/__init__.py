"""The OpenGL cast-iron table: one module per part, the text atlas, camera and the animation timeline."""
