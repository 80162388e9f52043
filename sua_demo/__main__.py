from sua_demo.cli import main

raise SystemExit(main())
