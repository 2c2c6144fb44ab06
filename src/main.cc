// kgym: a benchmark gym for compute kernels written by coding agents.
#include "app/cli.h"

int main(int argc, char** argv) { return kgym::app::run_cli(argc, argv); }
