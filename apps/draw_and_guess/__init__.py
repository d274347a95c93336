"""Draw and guess: rounds of drawing and guessing between the user and the agent.

Tool: `game.start_round` {mode, word, shapes?, seconds?}. Its manifest is generated from
the declarations in `_app` (`lineup app build apps/draw_and_guess --out FILE`).
"""

from ._app import DrawAndGuessApp

__all__ = ["DrawAndGuessApp"]
