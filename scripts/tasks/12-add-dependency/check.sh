grep -qx 'requests==2.31.0' requirements.txt && grep -qx 'flask==3.0.0' requirements.txt && grep -qix 'pyyaml==6.0.1' requirements.txt
