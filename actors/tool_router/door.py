"""What the tool router takes: nothing yet."""

from actors.kernel import Door

DOOR = Door({})
