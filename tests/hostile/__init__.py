"""A hostile installed app, built, signed, installed and launched like any third-party app,
and the tests in which it attacks the runtime from inside its jail."""
