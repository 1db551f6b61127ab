echo pyyaml==6.0.1 >> requirements.txt
