# Copies the exercise (INSTRUCTIONS.md, the stub, the tests) into the repository.
cp -R "$(dirname "$0")/files/." .
