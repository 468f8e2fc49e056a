from gpulesson.experiments.parallel import main

if __name__ == "__main__":
    raise SystemExit(main())
