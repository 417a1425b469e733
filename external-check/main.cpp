#include "cli.hpp"

int main(int argc, char** argv) {
  return dbcheck::extcheck::run(argc, argv);
}
