"""The `lineup` command: run the runtime, inspect it, and measure it.

Only the command line lives here (`cli` registers each `<area>_cmd` module). It may import
anything of the tree, but the peers and the bench only when their command runs: `lineup
appserver` and `lineup agent` import the peers then, and `lineup bench` imports the bench's
command line to build its subcommand and the measurements when one runs, so `lineup
--help` loads none of them. Every refusal is one sentence saying what to do next."""
