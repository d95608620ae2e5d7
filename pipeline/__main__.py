from pipeline.interfaces.cli import main

main(prog_name="pipeline")
