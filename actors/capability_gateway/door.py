"""What the capability gateway takes: nothing yet."""

from actors.kernel import Door

DOOR = Door({})
