// libsystemc's own main() calls sc_main(), so the library refers to it even in programs that
// drive the kernel themselves (the sim backend does, from its own thread, with their own main()).
// This weak definition satisfies that reference; a program with a real sc_main() overrides it.
#include <systemc>

extern "C" __attribute__((weak)) int sc_main(int, char**) { return 0; }
